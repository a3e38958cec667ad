#!/usr/bin/env bash
# Create .venv (once) and install the project with the extras that run on a
# machine without a GPU: OpenCL on PoCL, MPI (mpich wheel), PostgreSQL driver, tests.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
  "$PY" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip wheel setuptools
fi
stamp=.venv/.ensemble-installed
if [ ! -f "$stamp" ] || [ setup.cfg -nt "$stamp" ]; then
  .venv/bin/python -m pip install -q -e ".[opencl,mpi,postgres,stats,test,dev]"
  touch "$stamp"
fi
