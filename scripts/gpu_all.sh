#!/usr/bin/env bash
# Everything issue 6 needs from the GPU machine, in one command (about 8 minutes on an H200):
#   device run, carry [".whl"]:   bash scripts/gpu_all.sh
# Writes logs and JSON under $OUT (or ./out-gpu): GPU tests of both generators,
# the CUDA (csTuner) and OpenCL (Garvey) benchmarks, the timer comparison, the demo on PoCL.
set -u
cd "$(dirname "$0")/.."
. scripts/gpu_env.sh >/dev/null
OUT=${OUT:-out-gpu}; mkdir -p "$OUT"
timeout 100 python3 -m pytest -p no:cacheprovider -q tests/measurement/test_cuda_backend.py \
  tests/apps/test_stencil_cuda.py -m "not slow" > "$OUT/cuda_tests.log" 2>&1; tail -2 "$OUT/cuda_tests.log"
for plat in NVIDIA Portable; do
  ENSEMBLE_TEST_OPENCL_PLATFORM=$plat timeout 150 python3 -m pytest -p no:cacheprovider -q \
    tests/measurement/test_opencl_backend.py tests/apps/test_stencil_opencl.py > "$OUT/ocl_tests_$plat.log" 2>&1
  tail -1 "$OUT/ocl_tests_$plat.log"
done
timeout 300 python3 -m scripts.bench_stencil_gpu --part cuda --budget 32 --repeats 20 --out "$OUT" \
  > "$OUT/bench_cuda.log" 2>&1; tail -12 "$OUT/bench_cuda.log"
timeout 240 python3 -m scripts.bench_stencil_gpu --part opencl --part timers --ocl-budget 20 --out "$OUT" \
  > "$OUT/bench_ocl.log" 2>&1; tail -24 "$OUT/bench_ocl.log"
