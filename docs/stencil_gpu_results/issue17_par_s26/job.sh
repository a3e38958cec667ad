#!/usr/bin/env bash
# Issue 17, session 26: does the j3d7pt search pick better kernels with fewer trials in flight?
# One device call on a 4-GPU machine (run tool, kind nvidia-h100-x4, carry [".whl"]):
#   . scripts/gpu_env.sh >/dev/null; bash docs/stencil_gpu_results/issue17_par_s26/job.sh
# GPU 0: 5 x 300 searches at --parallelism 14 (the setting of every issue-17 run so far), seeds 1-5, then 6-8.
# GPUs 1-3: the same seeds at --parallelism 4 (seeds 1-3, 4-6, 7-8).
# Then every pick of both arms, with the three best recorded kernels as the card's yardstick, is re-timed in
# one process on GPU 0 (bench_stencil_retime: two passes, 5 rounds), so that the arms are compared on one card.
set -u
OUT=${OUT:-out-gpu}
W=docs/stencil_gpu_results/issue17_h100_full/run_watch.sh
E=$(( $(date +%s) + ${SEARCH_S:-470} ))
bash scripts/gpu_fanout.sh "END=$E bash $W j3d7pt:1:8:45" \
  "END=$E PAR=4 bash $W j3d7pt:1:3:150" "END=$E PAR=4 bash $W j3d7pt:4:3:150" "END=$E PAR=4 bash $W j3d7pt:7:2:150"
mkdir -p /tmp/fo && tar -xzf "$OUT/fanout.tgz" -C /tmp/fo
CUDA_VISIBLE_DEVICES=0 python3 -m scripts.bench_stencil_retime --stencil j3d7pt \
  --from 'docs/stencil_gpu_results/**/*.json' --top 3 --always '/tmp/fo/gpu*/**/bench_stencil_cuda.json' \
  --rounds 5 --out "$OUT" > "$OUT/retime_j3d7pt.log" 2>&1
tail -n 30 "$OUT/retime_j3d7pt.log"
