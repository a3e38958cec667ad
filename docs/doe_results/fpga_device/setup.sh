#!/usr/bin/env bash
# Unpack Debian bookworm's yosys 0.23 and nextpnr-ice40 0.4 (+ the libraries an Ubuntu image lacks)
# into /tmp/fpga and put wrappers for them first on PATH (LD_LIBRARY_PATH set for the tools only).
# Source it:  . .fpga_debs/setup.sh
_d="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
P=/tmp/fpga
mkdir -p $P/wrap
for f in "$_d"/*.deb; do dpkg -x "$f" $P; done
L=$P/usr/lib/x86_64-linux-gnu:$P/lib/x86_64-linux-gnu
for t in yosys nextpnr-ice40 berkeley-abc; do
  # nextpnr embeds Python 3.11 and starts it on every run: its standard library is carried too
  printf '#!/bin/sh\nunset PYTHONPATH\nPYTHONHOME=%s/usr LD_LIBRARY_PATH=%s${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %s/usr/bin/%s "$@"\n' "$P" "$L" "$P" "$t" > $P/wrap/$t
  chmod +x $P/wrap/$t
done
export PATH=$P/wrap:$PATH
# the Python wheels the tuners may import that the image lacks (deap and what it imports)
mkdir -p /tmp/site
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site "$_d"/whl/*.whl
export PYTHONPATH="/tmp/site:$(cd "$_d/.." && pwd)" PYTHONUNBUFFERED=1 PY=python3
