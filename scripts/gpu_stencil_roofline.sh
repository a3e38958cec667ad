#!/usr/bin/env bash
# Issue 17 on the GPU machine, in one command that fits a device call (device run, carry [".whl"]):
#   . scripts/gpu_env.sh; export PYTHONUNBUFFERED=1; DEADLINE=500 bash scripts/gpu_stencil_roofline.sh
# 1. the generated CUDA kernels (every optimisation, issue 17's included) against NumPy on 32^3 grids;
# 2. scripts/bench_stencil_gpu.py: SEARCHES searches of BUDGET evaluations per stencil of STENCILS,
#    records in $OUT/cuda_roofline.json after every search (a cut run keeps what it measured);
# 3. if time is left, Nsight Compute (SpeedOfLight, Occupancy, LaunchStats) on the first 6 launches (all kernels of
#    a fissioned one) of the first search's best kernel of NCU_STENCIL.
# DEADLINE: seconds from the start after which nothing new is started (the call's own limit is the hard one).
set -u
cd "$(dirname "$0")/.."
OUT=${OUT:-out-gpu}; mkdir -p "$OUT"
DEADLINE=${DEADLINE:-500}
BUDGET=${BUDGET:-60}; SEARCHES=${SEARCHES:-2}
STENCILS=${STENCILS:-hypterm,addsgd4,rhs4center,j3d7pt}
NCU_STENCIL=${NCU_STENCIL:-hypterm}
PY=${PY:-python3}
left() { echo $(( DEADLINE - SECONDS )); }
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv,noheader > "$OUT/cuda_tests.log" 2>&1
timeout 150 "$PY" -m pytest -p no:cacheprovider -q -m "not slow" tests/apps/test_stencil_cuda.py \
  -k "matches_numpy or wrong_output" >> "$OUT/cuda_tests.log" 2>&1
echo "tests done at ${SECONDS}s: $(tail -1 "$OUT/cuda_tests.log")"
t=$(( $(left) - 75 ))
if [ "$t" -gt 30 ]; then
  timeout "$t" "$PY" -m scripts.bench_stencil_gpu --part cuda --stencils "$STENCILS" --budget "$BUDGET" \
    --searches "$SEARCHES" --parallelism 14 --repeats 10 --out "$OUT" > "$OUT/bench.log" 2>&1
  echo "bench done at ${SECONDS}s (limit ${t}s): $(grep -c '% of roofline median' "$OUT/bench.log") stencils complete"
  grep "% of roofline median" "$OUT/bench.log"
fi
t=$(( $(left) - 5 ))
if [ "$t" -gt 25 ] && [ -f "$OUT/bench_stencil_cuda.json" ] && command -v ncu >/dev/null; then
  timeout "$t" ncu --csv --section SpeedOfLight --section Occupancy --section LaunchStats -k regex:stencil -c 6 \
    "$PY" -m scripts.stencil_ncu --stencil "$NCU_STENCIL" --config "$OUT/bench_stencil_cuda.json" \
    > "$OUT/ncu_${NCU_STENCIL}_tuned.csv" 2>&1
  echo "ncu done at ${SECONDS}s"
fi
