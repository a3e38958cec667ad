#!/usr/bin/env bash
# Issue 17 full-budget run (budget 300 evaluations, up to 5 searches per stencil), spread over device calls.
# Device call (run tool, carry [".whl"]):
#   . scripts/gpu_env.sh; END=$(( $(date +%s) + 585 - SECONDS )) bash docs/stencil_gpu_results/issue17_h100_full/run_full.sh \
#     j3d7pt:1:5 helmholtz:1:5 cheby:1:5 j3d27pt:1:5
# Each argument is stencil:first_seed:searches. For each, one process of scripts/bench_stencil_gpu.py
# (copy bandwidth and baseline measured in that process) runs as many of the searches as the time left
# until END (epoch seconds) allows at EST seconds per search (updated from the searches measured); the
# script saves its JSON after every search. At the end it prints NEXT: the searches still to run.
set -u
OUT=${OUT:-out-gpu}; PY=${PY:-python3}; EST=${EST:-70}; BUDGET=${BUDGET:-300}
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm,driver_version --format=csv,noheader > "$OUT/nvidia_smi.txt" 2>&1
cat "$OUT/nvidia_smi.txt"
next=""
for spec in "$@"; do
  IFS=: read -r name s0 nmax <<< "$spec"
  left=$(( END - $(date +%s) ))
  n=$(( (left - 20) / EST )); [ "$n" -gt "$nmax" ] && n=$nmax
  if [ "$n" -lt 1 ]; then echo "skip $name (${left}s left, ~${EST}s per search)"; next="$next $name:$s0:$nmax"; continue; fi
  d="$OUT/${name}_s$s0"; mkdir -p "$d"
  echo "== $name seeds $s0..$(( s0 + n - 1 )) with ${left}s left (~${EST}s per search), $(date -u +%H:%M:%S)"
  timeout $(( left - 3 )) "$PY" -m scripts.bench_stencil_gpu --part cuda --stencils "$name" --budget "$BUDGET" \
    --searches "$n" --seed "$s0" --parallelism 14 --repeats 10 --out "$d" > "$d/bench.log" 2>&1
  echo "   rc=$? at $(date -u +%H:%M:%S)"; grep -E "^device|% of roofline" "$d/bench.log"
  read -r done est <<< "$("$PY" - "$d/cuda_roofline.json" "$EST" <<'PYEOF'
import json, sys
try:
    r = json.load(open(sys.argv[1]))[0]
    s = [x["seconds"] for x in r["searches"]]
    print(len(s), int(max(s) * 1.15) + 5)
except Exception:
    print(0, sys.argv[2])
PYEOF
)"
  EST=$est
  [ "$done" -lt "$nmax" ] && next="$next $name:$(( s0 + done )):$(( nmax - done ))"
done
echo "NEXT:$next"
