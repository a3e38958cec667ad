#!/usr/bin/env bash
# Make sure some OpenCL device here can build a kernel. PoCL from PyPI
# (pocl-binary-distribution 3.0, LLVM 14) answers "unknown target CPU 'generic'"
# on CPUs newer than its LLVM (AMD family 1Ah, for one); Debian's
# pocl-opencl-icd (LLVM 15) works there. measurement.opencl then picks the first
# platform that builds. Installs the Debian package only when needed and possible.
set -euo pipefail
cd "$(dirname "$0")/.."
probe() {
  .venv/bin/python - <<'PY' 2>/dev/null
import logging, sys
logging.disable(logging.WARNING)
from measurement.opencl import OpenCLBackend
try:
    be = OpenCLBackend()
except Exception as exc:
    print(f"ensure_opencl: {exc}", file=sys.stderr)
    sys.exit(1)
print(f"OpenCL device: {be.name} ({be.platform_name})")
PY
}
if probe; then exit 0; fi
if command -v apt-get >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" = 0 ] || SUDO=sudo
  echo "ensure_opencl: PyPI's PoCL cannot build kernels on this CPU; installing Debian's pocl-opencl-icd" >&2
  $SUDO apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q pocl-opencl-icd >/dev/null
  probe && exit 0
fi
echo "ensure_opencl: no OpenCL device can build kernels here; install an OpenCL ICD (Debian: pocl-opencl-icd)" >&2
exit 1
