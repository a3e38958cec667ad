#!/usr/bin/env bash
# Session 35's screened-design runs (screen_rule.md beside this file), on the device's CPUs. Usage, device call:
#   . scripts/gpu_env.sh > /tmp/env.txt 2>&1; STEPS="grid_filescale grid_small" bash docs/bench_search_issue18/div_s35/run_screen.sh
#   . scripts/gpu_env.sh > /tmp/env.txt 2>&1; STEPS="file grid_a6000" bash docs/bench_search_issue18/div_s35/run_screen.sh
# Each step writes its JSON after every space, so a step cut by the call's limit keeps the spaces it finished.
set -u
OUT=${OUT:-out-gpu}; mkdir -p "$OUT"; J=${JOBS:-16}; t0=$(date +%s); LIMIT=${LIMIT:-570}
S=".whl/spaces"; ALL="$S/convolution_A100.json.gz $S/convolution_A6000.json.gz $S/convolution_W7800.json.gz $S/dedispersion_A100.json.gz $S/pnpoly_RTX2080Ti.json.gz"
for name in ${STEPS:?}; do
  case $name in
    grid_filescale) sp=$ALL; opts="--space grid --score-scale file";;
    file) sp=$ALL; opts="--space file";;
    grid_small) sp="$S/convolution_W7800.json.gz $S/pnpoly_RTX2080Ti.json.gz"; opts="--space grid";;
    grid_a6000) sp="$S/convolution_A6000.json.gz"; opts="--space grid";;
    grid_big) sp="$S/convolution_A100.json.gz $S/dedispersion_A100.json.gz"; opts="--space grid";;
  esac
  left=$(( LIMIT - ($(date +%s) - t0) ))
  [ "$left" -gt 30 ] || { echo "skip $name (no time left)" >> "$OUT/log.txt"; continue; }
  s=$(date +%s)
  timeout "$left" ${PY:-python3} -m scripts.bench_search $sp $opts --techniques default,docs.bench_search_issue18.div_s35.variant:Screened \
    --peers '' --repeats 25 --seed 9100 --random-repeats 200 --jobs "$J" --json-out "$OUT/screen_$name.json" \
    --markdown "$OUT/screen_$name.md" > "$OUT/screen_$name.log" 2>&1
  echo "$name rc $? $(( $(date +%s) - s )) s" >> "$OUT/log.txt"
done
cat "$OUT/log.txt"
