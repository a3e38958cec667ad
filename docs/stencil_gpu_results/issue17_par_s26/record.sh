#!/usr/bin/env bash
# Issue 17, session 26: the record runs at --parallelism 4 (adopted by the screen of job.sh), on one H100
# (run tool, kind nvidia-h100-x1, carry [".whl"]):
#   . scripts/gpu_env.sh >/dev/null; bash docs/stencil_gpu_results/issue17_par_s26/record.sh j3d7pt:1:5:60 j3d27pt:1:5:70
# A second call on the same (warm) machine runs what the first printed after NEXT:.
# Afterwards the picks of this run and the three best recorded kernels are re-timed in one process
# when RETIME names them (RETIME=j3d7pt,j3d27pt).
set -u
OUT=${OUT:-out-gpu}
END=$(( $(date +%s) + ${SEARCH_S:-540} )) bash docs/stencil_gpu_results/issue17_h100_full/run_watch.sh "$@"
RETIME=${RETIME:-}
for s in ${RETIME//,/ }; do
  python3 -m scripts.bench_stencil_retime --stencil "$s" --from 'docs/stencil_gpu_results/**/*.json' --top 3 \
    --always "$OUT/${s}_s*/bench_stencil_cuda.json" --rounds 5 --out "$OUT" > "$OUT/retime_$s.log" 2>&1
  tail -n 12 "$OUT/retime_$s.log"
done
