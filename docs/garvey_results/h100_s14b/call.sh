#!/usr/bin/env bash
# Device call (session 14b, issue 14 point 4): ExpS, Rand with the paper's 1000 samples, and the exhaustive
# oracle on the H100 (NVIDIA OpenCL).  Every kernel's paper-preset space has the same size at a given grid
# (it depends on the grid alone): 106,624 configurations at 64^3 (too many for one call), 42,777 at 32^3.
#   part A, 64^3 (the Table 3 grid): Rand (1000), ExpS (360 configurations), hybrid (4 loadings), cheapest kernels first
#   part B, 32^3: Rand (1000), ExpS (108), hybrid, then Exhaustive (the whole space, the true optimum)
# Run as:  . scripts/gpu_env.sh; export PY; bash docs/garvey_results/h100_s14b/call.sh
# Everything lands in $OUT/s14b/ as it comes (a killed call keeps what was written), then $OUT/s14b.tgz.
set -u
PY=${PY:-python3}
LIMIT=${LIMIT:-380}  # seconds this script may use in all
A_S=${A_S:-110}      # seconds for part A (0: none)
export PYTHONUNBUFFERED=1 PYOPENCL_NO_CACHE=1 CUDA_CACHE_DISABLE=1 POCL_KERNEL_CACHE=0  # every build a real build
PLAT=${PLAT:-NVIDIA}
SA=${SA:-64}; SB=${SB:-32}
PROCS=${PROCS:-16}; MAXL=${MAXL:-0.02}; RAND=${RAND:-1000}
R="$OUT/s14b"; mkdir -p "$R"
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; nproc; date -u) > "$R/device.txt"
q() { grep -v -i "warn\|lambda\|getattr(program\|RepeatedKernelRetrieval" ; }
if [ "$A_S" -gt 0 ]; then
  timeout $((A_S + 8)) "$PY" -m scripts.bench_garvey measure --platform "$PLAT" --size "$SA" \
      --names ${NAMES_A:-box1d_r1_x,star3d_r1_none,thumbtack3d_r1_z,star2d_r2_x,box1d_r5_z,star3d_r2_none} \
      --strategies Rand,ExpS,hybrid --rand-samples "$RAND" --cap 360 --repeats 1 --build-procs "$PROCS" --concurrent \
      --max-launch "$MAXL" --time-limit $((A_S - 5)) --hard-limit "$A_S" --out "$R/a_${SA}.json" 2>&1 | q > "$R/a_${SA}.log"
fi
L=$((LIMIT - SECONDS - 8))
# no --concurrent: Exhaustive (4096 configurations at a time) runs alone, after the others have finished
timeout $((L + 6)) "$PY" -m scripts.bench_garvey measure --platform "$PLAT" --size "$SB" \
    --names ${NAMES_B:-box1d_r1_x,star3d_r1_none} \
    --strategies Rand,ExpS,hybrid,Exhaustive --rand-samples "$RAND" --cap 360 --repeats 1 --build-procs "$PROCS" \
    --max-launch "$MAXL" --time-limit $((L - 3)) --hard-limit "$L" --out "$R/b_${SB}.json" 2>&1 | q > "$R/b_${SB}.log"
date -u >> "$R/device.txt"
tar -czf "$OUT/s14b.tgz" -C "$OUT" s14b
grep -v "^    " "$R/a_${SA}.log" 2>/dev/null | tail -20; grep -v "^    [a-z]*:[a-z]*:" "$R/b_${SB}.log" | tail -20
