#!/usr/bin/env bash
# Issue 17, session 27: l2pf in the search, paired on one machine (H200 x4: no H100 was lent this session).
# Run tool, kind nvidia-h200-x4, carry [".whl"]:
#   . scripts/gpu_env.sh >/dev/null; bash docs/stencil_gpu_results/issue17_l2pf_s27/job.sh hypterm:1:3:150 addsgd6:1:3:150
# For each stencil:first_seed:searches:EST argument, two GPUs run the same seeds at budget 300 and --parallelism 4
# (run_watch.sh): one with l2pf in the space (--opt-in l2pf), one without (the space of the table of record).
# GPU k*2 = with l2pf, GPU k*2+1 = without. A second call passes the next seeds (what NEXT: printed).
# RETIME=1 then re-times, on GPU 0, every pick of both arms found in docs/stencil_gpu_results/issue17_l2pf_s27/
# and in this call's folders, in one process per stencil (bench_stencil_retime --always, two passes, 5 rounds).
# The rules are in docs/STENCILS.md, "Session 27: l2pf in the search".
set -u
OUT=${OUT:-out-gpu}
W=docs/stencil_gpu_results/issue17_h100_full/run_watch.sh
if [ -n "${RETIME:-}" ]; then S=${SEARCH_S:-370}; else S=${SEARCH_S:-530}; fi  # the re-timing needs ~150 s
E=$(( $(date +%s) + S ))
jobs=()
for spec in "$@"; do
  jobs+=("END=$E EXTRA='--opt-in l2pf' bash $W $spec" "END=$E bash $W $spec")
done
bash scripts/gpu_fanout.sh "${jobs[@]}"
mkdir -p /tmp/fo && tar -xzf "$OUT/fanout.tgz" -C /tmp/fo
if [ -n "${RETIME:-}" ]; then
  for spec in "$@"; do
    s=${spec%%:*}
    CUDA_VISIBLE_DEVICES=0 python3 -m scripts.bench_stencil_retime --stencil "$s" --from '/nonexistent' --top 0 \
      --always "docs/stencil_gpu_results/issue17_l2pf_s27/**/bench_stencil_cuda.json" \
      --always "/tmp/fo/**/bench_stencil_cuda.json" --rounds 5 --out "$OUT" > "$OUT/retime_$s.log" 2>&1
    tail -n 16 "$OUT/retime_$s.log"
  done
fi
