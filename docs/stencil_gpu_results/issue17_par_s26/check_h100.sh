#!/usr/bin/env bash
# Issue 17, session 26: the H100 check of 4 trials in flight against 14 (one H100, one call; run tool, kind
# nvidia-h100-x1, carry [".whl"]):
#   . scripts/gpu_env.sh >/dev/null; bash docs/stencil_gpu_results/issue17_par_s26/check_h100.sh
# j3d7pt at 14 in flight, seeds 1-8, then at 4 in flight, seeds 6-8 (seeds 1-5 at 4 are the record run, in
# issue17_par_s26/h100/call1); then every pick of both, and the three best recorded kernels, re-timed in one
# process on this card.
set -u
OUT=${OUT:-out-gpu}
W=docs/stencil_gpu_results/issue17_h100_full/run_watch.sh
E=$(( $(date +%s) + ${SEARCH_S:-460} ))
mkdir -p "$OUT/p14" "$OUT/p4"
OUT="$OUT/p14" END=$E PAR=14 bash $W j3d7pt:1:8:35
OUT="$OUT/p4" END=$E PAR=4 bash $W j3d7pt:6:3:70
python3 -m scripts.bench_stencil_retime --stencil j3d7pt --from 'docs/stencil_gpu_results/**/*.json' --top 3 \
  --always "$OUT/p*/j3d7pt_s*/bench_stencil_cuda.json" \
  --always 'docs/stencil_gpu_results/issue17_par_s26/h100/call1/j3d7pt_s1/bench_stencil_cuda.json' \
  --rounds 5 --out "$OUT" > "$OUT/retime_j3d7pt.log" 2>&1
tail -n 25 "$OUT/retime_j3d7pt.log"
