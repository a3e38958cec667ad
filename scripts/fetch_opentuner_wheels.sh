#!/usr/bin/env bash
# Wheels of OpenTuner 0.8.8 and what it needs, for the offline GPU machine's Python 3.12:
# run on the development machine; scripts/gpu_env.sh installs them there into /tmp/site_ot.
#
#   scripts/fetch_opentuner_wheels.sh [PYTHON3.12]          (default: $PY312, python3.12, pyenv's 3.12)
#
# Writes .whl/opentuner/ (git-ignored, carried to the device with the tree):
#   opentuner 0.8.8, SQLAlchemy 1.3.24 (built pure-Python: DISABLE_SQLALCHEMY_CEXT=1) and
#   future 1.0.0 -- wheels, not sdists: the device's python may lack setuptools.
# Not included: numpy (preinstalled on the device) and argparse, which OpenTuner lists but which is
# in the standard library: the 2015 backport (argparse 1.4.0) installed with --target puts an
# argparse.py on PYTHONPATH, ahead of the standard library's, in the OpenTuner process.
# Sources come from the configured package index; FIND_LINKS=DIR adds a folder of sdists/wheels
# (e.g. FIND_LINKS=/tmp/otw).  The last step checks the three alone: installs them with --target
# into a temporary folder (numpy, which the device has, into another) and starts
# scripts/_opentuner_proxy_child.py with PYTHONPATH=those two folders.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
py="${1:-${PY312:-}}"
if [ -z "$py" ]; then
  for c in python3.12 /root/.pyenv/versions/3.12*/bin/python3.12; do   # a pyenv shim may not run: try each
    if "$c" -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1; then py="$c"; break; fi
  done
fi
[ -n "$py" ] || { echo "fetch_opentuner_wheels: no python3.12 found; pass its path" >&2; exit 2; }
"$py" -c 'import sys; assert sys.version_info[:2] == (3, 12), sys.version' \
  || { echo "fetch_opentuner_wheels: $py is not Python 3.12 (the device's)" >&2; exit 2; }
dest="$root/.whl/opentuner"
mkdir -p "$dest"
links=()
[ -n "${FIND_LINKS:-}" ] && links=(--find-links "$FIND_LINKS")
export DISABLE_SQLALCHEMY_CEXT=1 PIP_ROOT_USER_ACTION=ignore
"$py" -m pip wheel -q --no-deps "${links[@]}" -w "$dest" \
  opentuner==0.8.8 SQLAlchemy==1.3.24 future==1.0.0
rm -f "$dest"/*.tar.gz "$dest"/*.zip "$dest"/argparse-*.whl
ls -1 "$dest"

# check: the wheels alone (plus numpy, which the device has) run the proxy's child
chk="$(mktemp -d)"
trap 'rm -rf "$chk"' EXIT
"$py" -m pip install -q --no-index --no-deps --target "$chk/site" "$dest"/*.whl
"$py" -m pip install -q --target "$chk/numpy" "${links[@]}" numpy
printf '%s\n' '{"params": [{"name": "a", "kind": "index", "high": 3}], "seed": 0, "parallelism": 2, "technique": null, "seeds": []}' \
  '{"ask": 2, "wait": false, "idle": 10}' \
  | (cd "$chk" && PYTHONPATH="$chk/site:$chk/numpy" PYTHONNOUSERSITE=1 "$py" "$root/scripts/_opentuner_proxy_child.py") \
  | tee "$chk/out.txt"
grep -q '"proposals": \[{' "$chk/out.txt" \
  || { echo "fetch_opentuner_wheels: the child did not run from the wheels alone" >&2; exit 1; }
echo "fetch_opentuner_wheels: ok, $(ls "$dest"/*.whl | wc -l) wheels in $dest"
