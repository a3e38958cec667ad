#!/usr/bin/env bash
# Issue 17: the GPU call prepared in session 26 (one H100; run tool, kind nvidia-h100-x1, carry [".whl"]):
#   . scripts/gpu_env.sh >/dev/null; bash docs/stencil_gpu_results/issue17_l2pf_s26/job.sh
# 1. the GPU tests of the launch hold and of l2pf (marker cuda);
# 2. held against plain CUDA event times, side by side (scripts/bench_cuda_hold.py), on j3d7pt and hypterm;
# 3. l2pf 0/1/2/4 on the record's best streamed picks of the four high-order stencils, timed and profiled
#    (scripts/gpu_ncu.sh --plan; started only if NCU_S seconds are left before the call's END).
# The adoption rules for 2 and 3 are in docs/STENCILS.md ("built in session 26, for the next GPU call").
set -u
OUT=${OUT:-out-gpu}; PY=${PY:-python3}
END=${END:-$(( $(date +%s) + 560 ))}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader | tee "$OUT/nvidia_smi.txt"
"$PY" -m pytest tests/measurement/test_cuda_hold.py tests/apps/test_stencil_cuda_l2pf.py -m cuda -q \
  -p no:cacheprovider > "$OUT/cuda_tests.log" 2>&1
tail -n 4 "$OUT/cuda_tests.log"
for spec in j3d7pt:6:7 hypterm:3:5; do
  IFS=: read -r s top rounds <<< "$spec"
  "$PY" -m scripts.bench_cuda_hold --stencil "$s" --from 'docs/stencil_gpu_results/**/*.json' --top "$top" \
    --rounds "$rounds" --out "$OUT" > "$OUT/hold_$s.log" 2>&1
  tail -n $(( top + 3 )) "$OUT/hold_$s.log"
done
left=$(( END - $(date +%s) ))
if [ "$left" -ge "${NCU_S:-150}" ]; then
  DEADLINE=$(( left - 10 )) bash scripts/gpu_ncu.sh --plan docs/stencil_gpu_results/issue17_l2pf_s26/plan.json
else
  echo "NEXT: gpu_ncu.sh --plan docs/stencil_gpu_results/issue17_l2pf_s26/plan.json (${left}s left)"
fi
