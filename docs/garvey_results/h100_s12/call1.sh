#!/usr/bin/env bash
# Device call 1 (session 12): build-time diagnosis, then Table 3 on a stratified subset.
# Run as:  . scripts/gpu_env.sh; export PYTHONUNBUFFERED=1; bash docs/garvey_results/h100_s12/call1.sh
# (LIMIT: seconds this script may use in all; results land under $OUT as they come.)
set -u
PY=${PY:-python3}   # gpu_env.sh sets PY without exporting it
LIMIT=${LIMIT:-540}
CLI_S=${CLI_S:-70}   # kept for the CLI run at the end
export PYOPENCL_NO_CACHE=1 CUDA_CACHE_DISABLE=1   # every build is a real build (compile time as the paper measures it)
PLAT=${PLAT:-NVIDIA}
SIZE=${SIZE:-64}
(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null; nproc) > "$OUT/device.txt"
# 1. why Rand's builds took ~16 s: the same random configurations built one at a time, loops rolled vs left to the compiler
timeout ${BT_LIMIT:-75} "$PY" -m scripts.bench_garvey buildtime --platform "$PLAT" --size "$SIZE" --samples 12 \
    --budget ${BT_BUDGET:-30} --out "$OUT/buildtime.json" 2>&1 | grep -v -i "warn\|lambda" > "$OUT/buildtime.log"
# fewer Rand samples if the rolled builds are still slow (so the table's rows still complete)
RS=$("$PY" -c "import json,sys
try:
    d=json.load(open('$OUT/buildtime.json'))['variants']['rolled']; m=sum(r['build_s'] for r in d)/len(d)
except Exception: m=99
print(${RAND_SAMPLES:-300} if m < 4 else 60)")
echo "rand samples: $RS" >> "$OUT/buildtime.log"
L=$((LIMIT - CLI_S - SECONDS - 15))
timeout $((L + 12)) "$PY" -m scripts.bench_garvey measure --platform "$PLAT" --size "$SIZE" \
    --names ${NAMES:-box1d_r5_z,star2d_r2_x,thumbtack3d_r1_z,box3d_r1_none,diamond2d_r3_z,star3d_r2_none,diamond3d_r2_none,nocorners2d_r2_y,box2d_r2_x,nocorners3d_r2_none} \
    --strategies Rand,hybrid,dims,opts,default,AUCBandit --rand-samples "$RS" --budget ${CAP:-100} --cap ${CAP:-100} \
    --repeats 1 --build-procs ${PROCS:-16} --concurrent --max-launch 0.02 --time-limit $((L - 10)) --hard-limit "$L" \
    --out "$OUT/nv_table3.json" 2>&1 | grep -v -i "warn\|lambda" > "$OUT/table3.log"
# 2. the predictor's model from the heuristic runs just measured (hybrid, four loadings per kernel), then
# 3. --technique garvey through the CLI with that model, end to end on this device
"$PY" -m scripts.garvey_dataset model "$OUT/nv_table3.json" --platform "${PLAT_LABEL:-NVIDIA H100 OpenCL, ${SIZE}^3}" \
    --out "$OUT/loading_model.json" > "$OUT/cli.log" 2>&1
timeout $((CLI_S - 10)) "$PY" -m apps.stencil --backend opencl --platform "$PLAT" --suite garvey \
    --benchmark ${CLI_BENCH:-star2d_r2_x} --size "$SIZE" --technique garvey --loading-model "$OUT/loading_model.json" \
    --test-limit ${CLI_TESTS:-40} --database sqlite:////tmp/garvey_cli.db 2>&1 | grep -v -i "warn\|lambda" >> "$OUT/cli.log"
echo "cli rc ${PIPESTATUS[0]}" >> "$OUT/cli.log"
tail -5 "$OUT/table3.log"; tail -8 "$OUT/cli.log"
