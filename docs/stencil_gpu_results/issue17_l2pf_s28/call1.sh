#!/usr/bin/env bash
# Issue 17, session 28: does l2pf in the default space cost the low-order stencils that it does not help?
# (rule: docs/STENCILS.md, "Issue 17, session 28"). One call on four H200s (run tool, kind nvidia-h200-x4,
# carry [".whl"]):
#   . scripts/gpu_env.sh >/dev/null; bash docs/stencil_gpu_results/issue17_l2pf_s28/call1.sh
# GPU 0: j3d7pt seeds 1-5 in the default space (l2pf in it); GPU 1: the same with --require "l2pf == 0";
# GPU 2 and 3: j3d27pt likewise. Budget 300, --parallelism 4, the options of every issue-17 run (run_watch.sh).
# Then every pick of both arms is re-timed in one process per stencil (two passes of 5 rounds).
set -u
OUT=${OUT:-out-gpu}
W=docs/stencil_gpu_results/issue17_h100_full/run_watch.sh
E=$(( $(date +%s) + ${SEARCH_S:-440} ))
with="mkdir -p \$OUT/with; OUT=\$OUT/with END=$E bash $W"
without="mkdir -p \$OUT/without; OUT=\$OUT/without END=$E EXTRA='--require l2pf==0' bash $W"
bash scripts/gpu_fanout.sh "$with j3d7pt:1:5:60" "$without j3d7pt:1:5:60" "$with j3d27pt:1:5:90" "$without j3d27pt:1:5:90"
mkdir -p /tmp/fo && tar -xzf "$OUT/fanout.tgz" -C /tmp/fo
for s in j3d7pt j3d27pt; do
  g=0; [ "$s" = j3d27pt ] && g=2
  CUDA_VISIBLE_DEVICES=$g python3 -m scripts.bench_stencil_retime --stencil "$s" --from /nonexistent --top 0 \
    --always "/tmp/fo/**/bench_stencil_cuda.json" --rounds 5 --out "$OUT" > "$OUT/retime_$s.log" 2>&1 &
done
wait
tail -n 14 "$OUT"/retime_*.log
