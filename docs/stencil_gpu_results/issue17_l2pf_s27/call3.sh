#!/usr/bin/env bash
# Issue 17, session 27, third call (H200 x4, warm, carry [".whl"]): seed 4 of both arms of both stencils, one per
# GPU, then every pick of seeds 1-4 re-timed in one process per stencil (GPU 0: hypterm, GPU 1: addsgd6).
set -u
OUT=${OUT:-out-gpu}
W=docs/stencil_gpu_results/issue17_h100_full/run_watch.sh
E=$(( $(date +%s) + ${SEARCH_S:-360} ))
w="mkdir -p \$OUT/with; OUT=\$OUT/with END=$E EXTRA='--opt-in l2pf' bash $W"
o="mkdir -p \$OUT/without; OUT=\$OUT/without END=$E bash $W"
bash scripts/gpu_fanout.sh "$w hypterm:4:1:300" "$w addsgd6:4:1:300" "$o hypterm:4:1:200" "$o addsgd6:4:1:200"
mkdir -p /tmp/fo && tar -xzf "$OUT/fanout.tgz" -C /tmp/fo
for s in hypterm addsgd6; do
  g=0; [ "$s" = addsgd6 ] && g=1
  CUDA_VISIBLE_DEVICES=$g python3 -m scripts.bench_stencil_retime --stencil "$s" --from /nonexistent --top 0 \
    --always "docs/stencil_gpu_results/issue17_l2pf_s27/**/bench_stencil_cuda.json" \
    --always "/tmp/fo/**/bench_stencil_cuda.json" --rounds 5 --out "$OUT" > "$OUT/retime_$s.log" 2>&1 &
done
wait
tail -n 12 "$OUT"/retime_*.log
