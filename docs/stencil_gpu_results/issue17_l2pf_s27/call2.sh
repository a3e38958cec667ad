#!/usr/bin/env bash
# Issue 17, session 27, second call (H200 x4, carry [".whl"]): the first call (job.sh) ended with one search per
# stencil with l2pf and two without (a search took ~300 s with l2pf and ~200 s without at --parallelism 4, not
# the ~150 s guessed). This call brings both arms to seeds 1-3: each GPU runs one with-l2pf search, then, on
# GPUs 0 and 2, the without-l2pf seed 3. Folders: $OUT/gpu<k>/with/<stencil>_s<seed>, .../without/...
set -u
OUT=${OUT:-out-gpu}
W=docs/stencil_gpu_results/issue17_h100_full/run_watch.sh
E=$(( $(date +%s) + ${SEARCH_S:-565} ))
w="mkdir -p \$OUT/with \$OUT/without; OUT=\$OUT/with END=$E EXTRA='--opt-in l2pf' bash $W"
o="OUT=\$OUT/without END=$E bash $W"
bash scripts/gpu_fanout.sh "$w hypterm:2:1:300; $o hypterm:3:1:180" "$w hypterm:3:1:300" \
  "$w addsgd6:2:1:300; $o addsgd6:3:1:180" "$w addsgd6:3:1:300"
