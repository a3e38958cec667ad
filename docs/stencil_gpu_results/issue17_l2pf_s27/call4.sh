#!/usr/bin/env bash
# Issue 17: the with-l2pf arm again (session 27's fell back to random sampling: docs/STENCILS.md, "Issue 17,
# session 27"), now through the ensemble. One call on four H200s (run tool, kind nvidia-h200-x4, carry [".whl"]):
#   . scripts/gpu_env.sh >/dev/null; bash docs/stencil_gpu_results/issue17_l2pf_s27/call4.sh
# GPU 0: hypterm seeds 1-2, GPU 1: hypterm 3-4, GPU 2: addsgd6 1-2, GPU 3: addsgd6 3-4, all with --opt-in l2pf
# (a search took ~200 s without l2pf at --parallelism 4). Then every pick of both arms (the without-arm's are in
# call1/-call3/, the random-sampling picks stay beside them for reference) is re-timed in one process per
# stencil. If a search fails with a ConfigurationError, the benchmark now stops and says so.
set -u
OUT=${OUT:-out-gpu}
W=docs/stencil_gpu_results/issue17_h100_full/run_watch.sh
E=$(( $(date +%s) + ${SEARCH_S:-500} ))  # the re-timing after it took ~15 s in call 3
w="mkdir -p \$OUT/with; OUT=\$OUT/with END=$E EXTRA='--opt-in l2pf' bash $W"
bash scripts/gpu_fanout.sh "$w hypterm:1:2:220" "$w hypterm:3:2:220" "$w addsgd6:1:2:220" "$w addsgd6:3:2:220"
mkdir -p /tmp/fo && tar -xzf "$OUT/fanout.tgz" -C /tmp/fo
for s in hypterm addsgd6; do
  g=0; [ "$s" = addsgd6 ] && g=1
  CUDA_VISIBLE_DEVICES=$g python3 -m scripts.bench_stencil_retime --stencil "$s" --from /nonexistent --top 0 \
    --always "docs/stencil_gpu_results/issue17_l2pf_s27/**/bench_stencil_cuda.json" \
    --always "/tmp/fo/**/bench_stencil_cuda.json" --rounds 5 --out "$OUT" > "$OUT/retime_$s.log" 2>&1 &
done
wait
tail -n 14 "$OUT"/retime_*.log
