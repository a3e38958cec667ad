#!/usr/bin/env bash
# Tune the nvcc flags of every bundled CUDA program for GPU run time, with a
# small budget, and print the speedup over the plain `nvcc -O3` build.
#
# For the GPU machine (H100/H200, CUDA 13, Python 3.12, no network): run from
# the repository root as   bash scripts/gpu_nvcc_bench.sh
# It needs numpy, sqlalchemy and deap importable; when they are not, it sources
# scripts/gpu_env.sh (wheels brought along in .whl/).  Budget: each program is
# tuned for at most $NVCC_BENCH_STOP_AFTER s (default 30) or $NVCC_BENCH_LIMIT
# unique builds (default 10), then the best and the -O3 build are rerun
# alternately 3 times; the whole script stays under 6 minutes (hard stop 350 s).
# Results: a table on stdout and nvcc_bench.json in $OUT (or /tmp).
# Without a GPU, `bash scripts/gpu_nvcc_bench.sh --objective compile` runs the
# same path with the ptxas compile-only objective (that is how it is tested).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/.."
PY=${PY:-python3}
if ! "$PY" -c "import numpy, sqlalchemy, deap" 2>/dev/null; then
  # shellcheck disable=SC1091
  . scripts/gpu_env.sh
fi
export PYTHONPATH="$(pwd)${PYTHONPATH:+:$PYTHONPATH}"
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
nvcc --version | tail -1
work=$(mktemp -d /tmp/nvcc-bench.XXXXXX)
out_dir=${OUT:-/tmp}
start=$(date +%s)
timeout 350 "$PY" -m apps.nvcc_flags.bench \
  --test-limit "${NVCC_BENCH_LIMIT:-10}" --stop-after "${NVCC_BENCH_STOP_AFTER:-30}" --confirm 3 \
  --database "sqlite:///$work/nvcc_bench.db" --json "$out_dir/nvcc_bench.json" "$@"
rc=$?
echo "gpu_nvcc_bench: exit $rc after $(( $(date +%s) - start )) s; rows in $out_dir/nvcc_bench.json"
rm -rf "$work"
exit $rc
