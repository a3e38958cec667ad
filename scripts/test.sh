#!/usr/bin/env bash
# The test command of the README: sets up .venv on a fresh machine, then runs the
# import-layering check and the test suite. Extra pytest arguments pass through.
# The suite runs on pytest-xdist workers, one per CPU up to four (TEST_WORKERS=N to choose,
# TEST_WORKERS=0 for one process); tests/conftest.py keeps the PostgreSQL and the MPI tests
# each on one worker. Why: CI is to stay under 30 minutes, and one pytest process kept only
# one of the CI machine's two cores busy (the suite took 31-35 min in one process).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh
bash scripts/ensure_opencl.sh || echo "test.sh: no usable OpenCL device: the opencl tests will skip" >&2
. .venv/bin/activate
lint-imports --config setup.cfg
python -m pytest -n "${TEST_WORKERS:-auto}" --maxprocesses=4 --dist loadgroup "$@"
