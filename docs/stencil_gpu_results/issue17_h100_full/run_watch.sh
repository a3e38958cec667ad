#!/usr/bin/env bash
# Issue 17 full-budget run, second helper (hypterm, rhs4center): like run_full.sh, but instead of fixing the
# number of searches in advance, each process is started with all its searches and watched; after every
# finished search the next one is let run only if it can end before END (epoch seconds) at 1.03 x the
# longest search time measured so far in that process, otherwise the process is stopped there (EST, the
# guess per search, decides only whether a process is started at all).
# The bench script saves its JSON after every search, so the searches done are kept.
# Device call (run tool, carry [".whl"]):
#   . scripts/gpu_env.sh; END=$(( $(date +%s) + 590 - SECONDS )) \
#     bash docs/stencil_gpu_results/issue17_h100_full/run_watch.sh hypterm:1:5:105
# Each argument is stencil:first_seed:searches:EST. The options of scripts/bench_stencil_gpu.py are
# run_full.sh's: --part cuda --budget 300 --parallelism 14 --repeats 10 (no --more-seeds); EXTRA (unquoted)
# adds options, e.g. EXTRA=--merge-seed; PAR sets --parallelism (default 4 since session 26, was 14: the trials in flight; see STENCILS.md).
# At the end it prints NEXT: the searches still to run.
set -u
set -m   # each background job gets its own process group, so that it can be stopped with its workers
OUT=${OUT:-out-gpu}; PY=${PY:-python3}; BUDGET=${BUDGET:-300}; PAR=${PAR:-4}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader > "$OUT/nvidia_smi.txt" 2>&1
cat "$OUT/nvidia_smi.txt"
next=""
for spec in "$@"; do
  IFS=: read -r name s0 nmax est <<< "$spec"
  left=$(( END - $(date +%s) ))
  if [ "$left" -lt $(( est + 15 )) ]; then
    echo "skip $name (${left}s left, ~${est}s per search)"; next="$next $name:$s0:$nmax"; continue
  fi
  d="$OUT/${name}_s$s0"; mkdir -p "$d"
  echo "== $name seeds $s0..$(( s0 + nmax - 1 )) with ${left}s left (~${est}s per search), $(date -u +%H:%M:%S)"
  "$PY" -m scripts.bench_stencil_gpu --part cuda --stencils "$name" --budget "$BUDGET" \
    --searches "$nmax" --seed "$s0" --parallelism "$PAR" --repeats 10 --out "$d" ${EXTRA:-} > "$d/bench.log" 2>&1 &
  pid=$!
  done=0; t_last=$(date +%s); longest=0; stopped=0
  while kill -0 "$pid" 2>/dev/null; do
    sleep 1
    n=$(grep -c '^{"stencil"' "$d/bench.log" 2>/dev/null); n=${n:-0}
    now=$(date +%s)
    if [ "$n" -gt "$done" ]; then
      dt=$(( now - t_last )); [ "$done" -eq 0 ] && dt=$(( dt - 10 ))  # the first one includes ~11 s of setup
      [ "$dt" -gt "$longest" ] && longest=$dt
      done=$n; t_last=$now
      echo "   search $(( s0 + done - 1 )) done at $(date -u +%H:%M:%S) (~${dt}s)"
      e=$longest; [ "$e" -lt 1 ] && e=$est
      if [ "$done" -lt "$nmax" ] && [ $(( now + e * 103 / 100 + 3 )) -gt "$END" ]; then
        echo "   stop $name after $done searches: $(( END - now ))s left, next needs ~${e}s"
        kill -TERM -- "-$pid" 2>/dev/null; sleep 2; kill -KILL -- "-$pid" 2>/dev/null; stopped=1
        break
      fi
    fi
    if [ "$now" -ge "$END" ]; then
      echo "   END reached during search $(( s0 + done )); stopping"
      kill -TERM -- "-$pid" 2>/dev/null; sleep 2; kill -KILL -- "-$pid" 2>/dev/null; stopped=1
      break
    fi
  done
  wait "$pid" 2>/dev/null; rc=$?
  echo "   rc=$rc stopped=$stopped at $(date -u +%H:%M:%S)"; grep -E "^device|% of roofline" "$d/bench.log"
  [ "$done" -lt "$nmax" ] && next="$next $name:$(( s0 + done )):$(( nmax - done )):$(( longest > 0 ? longest : est ))"
done
echo "NEXT:$next"
