#!/usr/bin/env bash
# Everything the offline GPU machine needs in .whl/ (git-ignored; carry [".whl"] on every device call),
# fetched on the development machine in one command (see ../shared/DEVICE.md for why each is needed):
#
#   bash scripts/fetch_gpu_wheels.sh
#
# * the Python 3.12 manylinux x86_64 wheels scripts/gpu_env.sh installs into /tmp/site: pyopencl,
#   pytools, platformdirs, siphash24, mako, markupsafe, sqlalchemy, greenlet, typing_extensions,
#   alembic, deap and moocore + cffi + pycparser (deap 1.4.4 imports moocore);
# * the PyCUDA 2026.1 source archive (gpu_env.sh builds it on the device, about 70 s, and leaves the
#   wheel in $OUT: copy it into .whl/ to skip the build next time);
# * with KT=1 only, .whl/kt/: Kernel Tuner 1.5.0 and what it needs beyond the device's own packages (numpy,
#   scipy, pandas, scikit-learn, matplotlib are there), for bench_search's Kernel Tuner side (gpu_env.sh:
#   /tmp/site_kt). It is 15 MB: with it .whl/ no longer fits beside the checkout (44 MB on disk) in a device
#   call's 64 MiB, so carry a subset for such calls (docs/bench_search_issue18/peers_s33/run.sh says which);
# * .whl/opentuner/ through scripts/fetch_opentuner_wheels.sh (OpenTuner 0.8.8 for bench_cstuner_gpu's
#   opentuner-0.8.8 tuner; skipped with a message when no Python 3.12 is found).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
dest="$root/.whl"; mkdir -p "$dest"
py="$root/.venv/bin/python"; [ -x "$py" ] || py=python3
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
  --platform any -d "$dest" pyopencl pytools platformdirs siphash24 mako markupsafe "sqlalchemy>=2" greenlet \
  typing_extensions alembic deap moocore cffi pycparser
if [ "${KT:-0}" = 1 ]; then
mkdir -p "$dest/kt"
"$py" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp --abi cp312 \
  --platform manylinux_2_28_x86_64 --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 \
  --platform any -d "$dest/kt" kernel_tuner==1.5.0 python-constraint2 jsonschema jsonschema-specifications \
  referencing rpds-py xmltodict pymoo autograd cma alive-progress about-time graphemeu Deprecated
fi
if ! ls "$dest"/pycuda-*.whl "$dest"/pycuda-*.tar.gz >/dev/null 2>&1; then
  # the sdist's metadata step needs setuptools and wheel in the running environment
  "$py" -m pip download -q --no-deps --no-binary=:all: --no-build-isolation -d "$dest" pycuda==2026.1
fi
bash "$root/scripts/fetch_opentuner_wheels.sh" \
  || echo "fetch_gpu_wheels: OpenTuner wheels not fetched (needs Python 3.12); the opentuner-0.8.8 tuner will say so" >&2
ls "$dest" "$dest/kt" "$dest/opentuner" 2>/dev/null
