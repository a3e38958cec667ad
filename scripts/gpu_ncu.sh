#!/usr/bin/env bash
# Nsight Compute on generated CUDA stencil kernels (GPU machine). Two modes:
#
# 1. Baseline and tuned kernel of each stencil of a bench_stencil_gpu results file:
#      . scripts/gpu_env.sh >/dev/null; bash scripts/gpu_ncu.sh RESULTS.json "hypterm addsgd4 addsgd6 rhs4center j3d7pt"
#    Writes $OUT/ncu_<stencil>_<baseline|tuned>.csv: speed of light, occupancy,
#    launch statistics and memory workload of the first launch of the kernel.
#
# 2. A plan (scripts/stencil_ncu.py explains the file; issue 17's is
#    docs/stencil_gpu_results/issue17_ncu/plan.json):
#      . scripts/gpu_env.sh; DEADLINE=450 bash scripts/gpu_ncu.sh --plan PLAN.json ["hypterm addsgd6 ..."]
#    One ncu process per stencil (in the order given, default the plan's), each
#    profiling one launch of every kernel of every item (sections SpeedOfLight,
#    Occupancy, LaunchStats, MemoryWorkloadAnalysis, SchedulerStats,
#    WarpStateStats, plus DRAM/L2/L1/local-memory byte counters; clocks not
#    locked, as in the benchmark), after the script has verified each item
#    against NumPy and timed it (10 launches).  Writes, in $OUT/ncu/:
#    ncu_<stencil>.ncu-rep, raw_<stencil>.csv (every collected metric, base
#    units), details_<stencil>.csv (the sections as ncu prints them, rules
#    included), run_<stencil>.log, items.jsonl, ptxas_<label>.txt,
#    summary.csv/.md; then packs it all into $OUT/ncu.tgz.  A stencil is
#    started only if DEADLINE (seconds since this script started) leaves
#    it at least 40 s, and is cut at DEADLINE.
set -u
PY=${PY:-python3}; OUT=${OUT:-.}
if [ "${1:-}" = "--plan" ]; then
  plan=$2
  stencils=${3:-$("$PY" -c "import json,sys; print(' '.join(dict.fromkeys(i['stencil'] for i in json.load(open(sys.argv[1]))['items'])))" "$plan")}
  DEADLINE=${DEADLINE:-450}
  dir="$OUT/ncu"; mkdir -p "$dir"
  { nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader; ncu --version; } \
    > "$dir/device.txt" 2>&1
  cat "$dir/device.txt"
  # the extra counters, each only if this device's ncu knows it (an unknown metric stops ncu)
  ncu --query-metrics > "$dir/query_metrics.txt" 2>&1
  extra=""
  for m in dram__bytes_read.sum dram__bytes_write.sum lts__t_bytes.sum l1tex__t_bytes.sum \
           l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum; do
    grep -q "^${m%.*} " "$dir/query_metrics.txt" && extra="${extra:+$extra,}$m"
  done
  echo "gpu_ncu: extra metrics: ${extra:-none}"
  for st in $stencils; do
    left=$(( DEADLINE - SECONDS ))
    if [ "$left" -lt 40 ]; then echo "gpu_ncu: $st skipped, ${left}s left"; continue; fi
    t0=$SECONDS
    timeout "$left" ncu --profile-from-start off --target-processes application-only --clock-control none \
      --kernel-name regex:stencil_kernel \
      --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
      --section SchedulerStats --section WarpStateStats ${extra:+--metrics "$extra"} \
      -f -o "$dir/ncu_$st" \
      "$PY" -m scripts.stencil_ncu --plan "$plan" --only "$st" --repeats 10 --out "$dir" \
      > "$dir/run_$st.log" 2>&1
    rc=$?
    echo "gpu_ncu: $st rc=$rc in $(( SECONDS - t0 ))s; $(grep -c '"label"' "$dir/run_$st.log") items; $(grep -c '^==PROF== Profiling' "$dir/run_$st.log") kernels profiled"
    grep -E '"label"' "$dir/run_$st.log" | "$PY" -c "
import json, sys
for ln in sys.stdin:
    r = json.loads(ln)
    print('  ', r['label'], r['state'], 'pct_roofline=%s recorded=%s regs=%s spills=%s err=%s' % (
        None if r.get('pct_roofline') is None else round(r['pct_roofline'], 1),
        None if r.get('recorded_pct_roofline') is None else round(r['recorded_pct_roofline'], 1),
        r.get('registers'), r.get('spill_stores'), r.get('max_abs_error')), r.get('reason') or '')" 2>&1
    grep -E '^==(ERROR|WARNING)==' "$dir/run_$st.log" | sort | uniq -c | head -5
    if [ -f "$dir/ncu_$st.ncu-rep" ]; then
      for page in raw details; do
        ncu --import "$dir/ncu_$st.ncu-rep" --csv --page "$page" --print-units base > "$dir/${page}_$st.csv" 2> "$dir/import_$st.err" \
          || ncu --import "$dir/ncu_$st.ncu-rep" --csv --page "$page" > "$dir/${page}_$st.csv" 2>> "$dir/import_$st.err"
      done
    fi
  done
  "$PY" -m scripts.stencil_ncu --summarize "$dir" 2>&1 | tee "$dir/summary.log"
  tar -czf "$OUT/ncu.tgz" -C "$OUT" ncu && rm -rf "$dir"
  ls -la "$OUT"
  exit 0
fi
results=$1; stencils=${2:-"hypterm addsgd4 addsgd6 rhs4center"}
for st in $stencils; do
  for which in baseline tuned; do
    cfg=baseline; [ "$which" = tuned ] && cfg=$results
    ncu --csv --kernel-name regex:stencil_kernel --launch-skip 2 --launch-count 1 \
        --section SpeedOfLight --section Occupancy --section LaunchStats --section MemoryWorkloadAnalysis \
        "$PY" -m scripts.stencil_ncu --stencil "$st" --config "$cfg" > "$OUT/ncu_${st}_${which}.csv" 2> "$OUT/ncu_${st}_${which}.err" \
      || echo "gpu_ncu: ncu failed for $st $which (see $OUT/ncu_${st}_${which}.err)" >&2
  done
done
