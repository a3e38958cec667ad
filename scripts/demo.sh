#!/usr/bin/env bash
# The demo command of the README: sets up .venv (scripts/setup_venv.sh), then runs a
# real tuning run with the default technique: tile sizes and loop order of a blocked
# NumPy matrix multiply (apps/demo/matmul.py). Prints the best configuration and
# writes a report to out/demo-report/. Extra arguments go to the tuner (e.g. --test-limit 100).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup_venv.sh
mkdir -p out
.venv/bin/ensemble-tuner run apps.demo.matmul:BlockedMatmul \
  --database sqlite:///out/demo.db --run-name "demo-$(date +%Y%m%d-%H%M%S)" \
  --test-limit 60 --report out/demo-report "$@"
echo "inspect the database: .venv/bin/ensemble-tuner runs --database sqlite:///out/demo.db"
