#!/usr/bin/env bash
# Session 35's device call (rule.md beside this file): the default of record, seeds 9000-9024, five spaces,
# grid searched and scored on the file mode's scale, then file mode, then (time allowing) grid on its own scale.
# Device call (carry [".whl"], .whl/spaces/ = the five files of ../shared/data/spaces):
#   . scripts/gpu_env.sh > /tmp/env.txt 2>&1; bash docs/bench_search_issue18/div_s35/run.sh
# Each step writes its JSON after every space, so a step cut by the call's limit keeps the spaces it finished.
set -u
OUT=${OUT:-out-gpu}; mkdir -p "$OUT"; J=${JOBS:-16}; t0=$(date +%s); LIMIT=${LIMIT:-575}
nproc > "$OUT/nproc.txt"
S=".whl/spaces"; SP="$S/convolution_A100.json.gz $S/convolution_A6000.json.gz $S/convolution_W7800.json.gz $S/dedispersion_A100.json.gz $S/pnpoly_RTX2080Ti.json.gz"
for step in "grid_filescale:--space grid --score-scale file" "file:--space file" "grid:--space grid"; do
  name=${step%%:*}; opts=${step#*:}
  left=$(( LIMIT - ($(date +%s) - t0) ))
  [ "$left" -gt 60 ] || { echo "skip $name (no time left)" >> "$OUT/log.txt"; continue; }
  s=$(date +%s)
  timeout "$left" ${PY:-python3} -m scripts.bench_search $SP $opts --techniques default --peers '' --repeats 25 \
    --seed 9000 --random-repeats 200 --jobs "$J" --json-out "$OUT/$name.json" --markdown "$OUT/$name.md" > "$OUT/$name.log" 2>&1
  echo "$name rc $? $(( $(date +%s) - s )) s" >> "$OUT/log.txt"
done
