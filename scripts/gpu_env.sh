#!/usr/bin/env bash
# Prepare the (bare, offline) GPU machine for the project: source it as the first
# line of every device command:   . scripts/gpu_env.sh
#
# * installs the wheels brought along in .whl/ into /tmp/site (pyopencl, pytools,
#   platformdirs, siphash24, mako, markupsafe, sqlalchemy, greenlet,
#   typing_extensions, alembic, deap, and moocore + cffi + pycparser, which
#   deap 1.4.4 imports; Python 3.12 manylinux x86_64);
# * registers NVIDIA's OpenCL ICD (present on the machine but not registered);
# * installs PyCUDA: from a wheel in .whl/ if one was built before, otherwise it
#   builds it from .whl/pycuda-*.tar.gz (about 70 s) and leaves the wheel in
#   $OUT (when set) so that it can be carried next time;
# * installs OpenTuner 0.8.8 from the wheels in .whl/opentuner/ (made by
#   scripts/fetch_opentuner_wheels.sh; its SQLAlchemy 1.3 must not meet ours)
#   into its own /tmp/site_ot and exports OPENTUNER_PYTHON / OPENTUNER_PYTHONPATH
#   for the technique opentuner-0.8.8 (scripts/_opentuner_proxy.py), which runs
#   OpenTuner in a subprocess with that path alone;
# * installs Kernel Tuner 1.5.0 from the wheels in .whl/kt/ (scripts/fetch_gpu_wheels.sh) into its own
#   /tmp/site_kt and exports KERNELTUNER_PYTHON / KERNELTUNER_PYTHONPATH, with which
#   scripts/_peers.run_peer starts scripts/bench_search.py's Kernel Tuner side (no venv there);
# * exports PYTHONPATH=/tmp/site:<repo root> and PY (the python to use).
# See ../shared/DEVICE.md for why each step is needed.
set -u
_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PY=${PY:-python3}
export PYTHONUNBUFFERED=1
mkdir -p /tmp/site
if ! ls /tmp/site/pyopencl >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site \
    "$_root"/.whl/*.whl || echo "gpu_env: wheel install failed" >&2
fi
export PYTHONPATH="/tmp/site:$_root${PYTHONPATH:+:$PYTHONPATH}"
# OpenTuner's own target (.whl/*.whl above does not descend into .whl/opentuner/): never on PYTHONPATH.
# Exported even without the wheels, so that opentuner-0.8.8 fails at once naming the fix (no pip try offline).
mkdir -p /tmp/site_ot
if ls "$_root"/.whl/opentuner/*.whl >/dev/null 2>&1 && ! ls /tmp/site_ot/opentuner >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site_ot \
    "$_root"/.whl/opentuner/*.whl || echo "gpu_env: OpenTuner wheel install failed" >&2
fi
OPENTUNER_PYTHON="$(command -v "$PY" || echo "$PY")"
export OPENTUNER_PYTHON OPENTUNER_PYTHONPATH=/tmp/site_ot
# Kernel Tuner likewise in its own target, with the moocore/cffi/pycparser that its pymoo imports
mkdir -p /tmp/site_kt
if ls "$_root"/.whl/kt/*.whl >/dev/null 2>&1 && ! ls /tmp/site_kt/kernel_tuner >/dev/null 2>&1; then
  "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site_kt \
    "$_root"/.whl/kt/*.whl "$_root"/.whl/moocore-*.whl "$_root"/.whl/cffi-*.whl "$_root"/.whl/pycparser-*.whl \
    || echo "gpu_env: Kernel Tuner wheel install failed" >&2
fi
export KERNELTUNER_PYTHON="$OPENTUNER_PYTHON" KERNELTUNER_PYTHONPATH=/tmp/site_kt
if [ -e /usr/lib/libnvidia-opencl.so.1 ] || [ -e /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 ]; then
  mkdir -p /etc/OpenCL/vendors
  lib=/usr/lib/libnvidia-opencl.so.1
  [ -e "$lib" ] || lib=/usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1
  echo "$lib" > /etc/OpenCL/vendors/nvidia.icd 2>/dev/null || true
fi
if ! "$PY" -c "import pycuda" 2>/dev/null; then
  if ! ls "$_root"/.whl/pycuda-*.whl >/dev/null 2>&1; then
    _b=$(mktemp -d)
    tar -xzf "$_root"/.whl/pycuda-*.tar.gz -C "$_b"
    ( cd "$_b"/pycuda-* && "$PY" configure.py --cuda-root=/usr/local/cuda >/dev/null \
      && "$PY" -m pip wheel -q --no-index --no-deps --no-build-isolation -w "$_b/wheel" . ) \
      || echo "gpu_env: PyCUDA build failed" >&2
    if ls "$_b"/wheel/pycuda-*.whl >/dev/null 2>&1; then
      "$PY" -m pip install -q --no-index --no-deps --no-compile --target /tmp/site "$_b"/wheel/pycuda-*.whl
      [ -n "${OUT:-}" ] && cp "$_b"/wheel/pycuda-*.whl "$OUT"/ 2>/dev/null
    fi
  fi
fi
"$PY" - <<'EOF'
import importlib
for m in ("pyopencl", "pycuda", "sqlalchemy", "deap"):
    try:
        importlib.import_module(m)
        print(f"gpu_env: {m} ok")
    except Exception as exc:  # report, do not stop the caller
        print(f"gpu_env: {m} MISSING ({exc})")
EOF
PYTHONPATH="$OPENTUNER_PYTHONPATH" "$OPENTUNER_PYTHON" -c \
  "import opentuner, sqlalchemy, numpy; print('gpu_env: opentuner ok (SQLAlchemy', sqlalchemy.__version__ + ')')" \
  2>/dev/null || echo "gpu_env: opentuner MISSING (no wheels in .whl/opentuner/? run scripts/fetch_opentuner_wheels.sh)"
PYTHONPATH="$KERNELTUNER_PYTHONPATH" "$KERNELTUNER_PYTHON" -c "import kernel_tuner; print('gpu_env: kernel_tuner ok')" \
  2>/dev/null || echo "gpu_env: kernel_tuner MISSING (no wheels in .whl/kt/? run scripts/fetch_gpu_wheels.sh)"
