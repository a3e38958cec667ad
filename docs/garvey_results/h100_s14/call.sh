#!/usr/bin/env bash
# Device call (session 14): build-time check (rolled vs compiler-unrolled cyclic loops), Table 3 on a
# stratified subset, the loading model from its hybrid runs, and --technique garvey through the CLI.
# Run as:  . scripts/gpu_env.sh; bash docs/garvey_results/h100_s14/call.sh
# Everything lands in $OUT/r/ as it comes (a killed call keeps what was written), then $OUT/results.tgz.
set -u
PY=${PY:-python3}   # gpu_env.sh sets PY without exporting it
LIMIT=${LIMIT:-560}  # seconds this script may use in all
CLI_S=${CLI_S:-60}   # kept for the CLI run at the end (0: no CLI run)
BT_S=${BT_S:-0}      # seconds for the build-time check (0: none)
export PYTHONUNBUFFERED=1 PYOPENCL_NO_CACHE=1 CUDA_CACHE_DISABLE=1 POCL_KERNEL_CACHE=0  # every build a real build
PLAT=${PLAT:-NVIDIA}
SIZE=${SIZE:-64}
R="$OUT/r"; mkdir -p "$R"
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; nproc; date -u) > "$R/device.txt"
q() { grep -v -i "warn\|lambda\|getattr(program" ; }
if [ "$BT_S" -gt 0 ]; then  # Rand's first configurations built one at a time: generator now vs loops left to the compiler
  timeout "$BT_S" "$PY" -m scripts.bench_garvey buildtime --platform "$PLAT" --size "$SIZE" --samples 12 \
      --benchmark ${BT_BENCH:-box1d_r5_z} --variants rolled,compiler --budget $(( (BT_S - 10) / 2 )) \
      --out "$R/buildtime.json" 2>&1 | q > "$R/buildtime.log"
fi
L=$((LIMIT - CLI_S - SECONDS - 10))
timeout $((L + 8)) "$PY" -m scripts.bench_garvey measure --platform "$PLAT" --size "$SIZE" \
    --names ${NAMES:-box1d_r5_z,star2d_r2_x,thumbtack3d_r1_z,box3d_r1_none,diamond2d_r3_z,star3d_r2_none,diamond3d_r2_none,nocorners2d_r2_y,box2d_r2_x,nocorners3d_r2_none} \
    --strategies Rand,hybrid,dims,opts,default,AUCBandit --rand-samples ${RAND:-300} --budget ${BUDGET:-300} --cap ${CAP:-360} \
    --repeats 1 --build-procs ${PROCS:-16} --concurrent --max-launch ${MAXL:-0.02} --time-limit $((L - 5)) --hard-limit "$L" \
    --out "$R/nv_table3.json" 2>&1 | q > "$R/table3.log"
if [ "$CLI_S" -gt 0 ]; then  # the model from the hybrid runs just measured, then the CLI with it, end to end
  "$PY" -m scripts.garvey_dataset model "$R/nv_table3.json" --platform "${PLAT_LABEL:-$PLAT OpenCL, ${SIZE}^3}" \
      --out "$R/loading_model.json" > "$R/cli.log" 2>&1
  timeout $((CLI_S - 5)) "$PY" -m apps.stencil --backend opencl --platform "$PLAT" --suite garvey \
      --benchmark ${CLI_BENCH:-star2d_r2_x} --size "$SIZE" --technique garvey --loading-model "$R/loading_model.json" \
      --test-limit ${CLI_TESTS:-40} --database sqlite:////tmp/garvey_cli.db 2>&1 | q >> "$R/cli.log"
  echo "cli rc ${PIPESTATUS[0]}" >> "$R/cli.log"
fi
tar -czf "$OUT/results.tgz" -C "$OUT" r
grep -v "^    " "$R/table3.log" | tail -25; tail -4 "$R/buildtime.log" 2>/dev/null; tail -6 "$R/cli.log" 2>/dev/null
