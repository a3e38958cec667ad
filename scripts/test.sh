#!/usr/bin/env bash
# The test command of the README: sets up .venv on a fresh machine, then runs the
# import-layering check and the test suite. Extra pytest arguments pass through.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh
bash scripts/ensure_opencl.sh || echo "test.sh: no usable OpenCL device: the opencl tests will skip" >&2
. .venv/bin/activate
lint-imports --config setup.cfg
python -m pytest "$@"
