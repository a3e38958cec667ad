#!/usr/bin/env bash
# Session 29: does the new default (the GP and TPE share the lead) cost the GPU stencil searches?
# (rule: docs/STENCILS.md, "Session 29: the default's new partner on the GPU", written before the run).
# Four GPUs (run tool kind nvidia-h200-x4 or -h100-x4, carry [".whl"]):
#   . scripts/gpu_env.sh >/dev/null; bash docs/stencil_gpu_results/issue18_partner_s29/call1.sh
# Per stencil of STENCILS (default "j3d7pt j3d27pt"), GPU 2k: seeds 1-5 with the new arm (ARM, default WithTPE);
# GPU 2k+1: the same with no --technique, i.e. the default of the day (in session 29 the GP alone; since session
# 30 the GP with TPE and the calibrated forest: to compare with the GP alone, add --technique
# docs.stencil_gpu_results.issue18_combo_s30.arms:ModelAlone to old= below). Budget 300, --parallelism 4, the
# options of every issue-17 run (run_watch.sh). Then every pick of both arms is re-timed in one process per stencil.
set -u
OUT=${OUT:-out-gpu}
W=docs/stencil_gpu_results/issue17_h100_full/run_watch.sh
E=$(( $(date +%s) + ${SEARCH_S:-440} ))
# ARM: the new arm's technique (session 29: WithTPE; session 30: ...issue18_combo_s30.arms:PartnerCalibrated)
tpe=${ARM:-docs.stencil_gpu_results.issue18_partner_s29.arms:WithTPE}
new="mkdir -p \$OUT/new; OUT=\$OUT/new END=$E EXTRA='--technique $tpe' bash $W"
old="mkdir -p \$OUT/old; OUT=\$OUT/old END=$E bash $W"
read -r -a names <<< "${STENCILS:-j3d7pt j3d27pt}"
jobs=()
for s in "${names[@]}"; do
  est=60; [ "$s" = j3d7pt ] || est=90
  jobs+=("$new $s:1:5:$est" "$old $s:1:5:$est")
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
