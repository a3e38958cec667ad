#!/usr/bin/env bash
# The demo command of the README: sets up .venv (scripts/setup_venv.sh), makes
# sure an OpenCL CPU device works (scripts/ensure_opencl.sh: PoCL), then runs a
# real tuning run with the default technique: Garvey's OpenCL optimisations
# (work-group size, block/cyclic merging, local memory, vectorisation, images)
# of a 3-D 7-point star stencil, every variant checked against NumPy.
# Prints the best configuration and writes a report to out/demo-report/.
# Extra arguments go to the tuner (e.g. --test-limit 100 --size 128).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh
bash scripts/ensure_opencl.sh
mkdir -p out
.venv/bin/python -m apps.stencil --backend opencl --pattern star --dims 3 --radius 1 --size 64 \
  --database sqlite:///out/demo.db --run-name "demo-$(date +%Y%m%d-%H%M%S)" \
  --test-limit 40 --report out/demo-report "$@"
echo "inspect the database: .venv/bin/ensemble-tuner runs --database sqlite:///out/demo.db"
