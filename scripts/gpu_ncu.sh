#!/usr/bin/env bash
# Nsight Compute on the baseline and the tuned kernel of each CUDA stencil (GPU machine).
#   . scripts/gpu_env.sh >/dev/null; bash scripts/gpu_ncu.sh RESULTS.json "hypterm addsgd4 addsgd6 rhs4center j3d7pt"
# RESULTS.json: a bench_stencil_gpu results file (its tuned_config per stencil).
# Writes $OUT/ncu_<stencil>_<baseline|tuned>.csv: speed of light, occupancy,
# launch statistics and memory workload of the first launch of the kernel.
set -u
results=$1; stencils=${2:-"hypterm addsgd4 addsgd6 rhs4center"}
PY=${PY:-python3}; OUT=${OUT:-.}
for st in $stencils; do
  for which in baseline tuned; do
    cfg=baseline; [ "$which" = tuned ] && cfg=$results
    ncu --csv --kernel-name regex:stencil_kernel --launch-skip 2 --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
        "$PY" -m scripts.stencil_ncu --stencil "$st" --config "$cfg" > "$OUT/ncu_${st}_${which}.csv" 2> "$OUT/ncu_${st}_${which}.err" \
      || echo "gpu_ncu: ncu failed for $st $which (see $OUT/ncu_${st}_${which}.err)" >&2
  done
done
