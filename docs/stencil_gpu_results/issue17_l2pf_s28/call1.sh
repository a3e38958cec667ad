#!/usr/bin/env bash
# Issue 17, session 28: does l2pf in the default space cost the low-order stencils that it does not help?
# (rule: docs/STENCILS.md, "Issue 17, session 28"). Two GPUs per stencil of STENCILS (default "j3d7pt j3d27pt":
# four H200s, run tool kind nvidia-h200-x4, carry [".whl"]; on two, one call per stencil):
#   . scripts/gpu_env.sh >/dev/null; [STENCILS=j3d7pt] bash docs/stencil_gpu_results/issue17_l2pf_s28/call1.sh
# Per stencil, GPU 2k: seeds 1-5 with l2pf in the space; GPU 2k+1: the same with --require "l2pf == 0".
# Budget 300, --parallelism 4, the options of every issue-17 run (run_watch.sh). It ran at d5f29dd, where l2pf
# was in the default space; it went back to opt-in after this run, so both arms now add --opt-in l2pf (the
# same two spaces).
# Then every pick of both arms is re-timed in one process per stencil (two passes of 5 rounds).
set -u
OUT=${OUT:-out-gpu}
W=docs/stencil_gpu_results/issue17_h100_full/run_watch.sh
E=$(( $(date +%s) + ${SEARCH_S:-440} ))
with="mkdir -p \$OUT/with; OUT=\$OUT/with END=$E EXTRA='--opt-in l2pf' bash $W"
without="mkdir -p \$OUT/without; OUT=\$OUT/without END=$E EXTRA='--opt-in l2pf --require l2pf==0' bash $W"
read -r -a names <<< "${STENCILS:-j3d7pt j3d27pt}"
jobs=()
for s in "${names[@]}"; do
  est=60; [ "$s" = j3d7pt ] || est=90
  jobs+=("$with $s:1:5:$est" "$without $s:1:5:$est")
done
bash scripts/gpu_fanout.sh "${jobs[@]}"
mkdir -p /tmp/fo && tar -xzf "$OUT/fanout.tgz" -C /tmp/fo
k=0
for s in "${names[@]}"; do
  CUDA_VISIBLE_DEVICES=$(( 2 * k )) python3 -m scripts.bench_stencil_retime --stencil "$s" --from /nonexistent \
    --top 0 --always "/tmp/fo/**/bench_stencil_cuda.json" --rounds 5 --out "$OUT" > "$OUT/retime_$s.log" 2>&1 &
  k=$(( k + 1 ))
done
wait
tail -n 14 "$OUT"/retime_*.log
