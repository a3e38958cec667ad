#!/usr/bin/env bash
# Session 36's (and 37's) runs on the device's CPUs (no GPU used). Usage, device call (carry [".whl"]):
#   . scripts/gpu_env.sh > /tmp/env.txt 2>&1; TECHS=default,docs.bench_search_issue18.s36.variant:Init2d SEED=1000 \
#     STEPS="file" bash docs/bench_search_issue18/s36/run.sh
# Each step writes its JSON after every space, so a step cut by the call's limit keeps the spaces it finished.
set -u
OUT=${OUT:-out-gpu}; mkdir -p "$OUT"; J=${JOBS:-16}; t0=$(date +%s); LIMIT=${LIMIT:-570}
S=".whl/spaces"; ALL="$S/convolution_A100.json.gz $S/convolution_A6000.json.gz $S/convolution_W7800.json.gz $S/dedispersion_A100.json.gz $S/pnpoly_RTX2080Ti.json.gz"
for name in ${STEPS:?}; do
  case $name in
    grid_filescale) sp=$ALL; opts="--space grid --score-scale file";;
    file) sp=$ALL; opts="--space file";;
    grid) sp=$ALL; opts="--space grid";;
    file_workers) sp=$ALL; opts="--space file --workers 1,8";;
    grid_small) sp="$S/convolution_W7800.json.gz $S/pnpoly_RTX2080Ti.json.gz"; opts="--space grid";;
    grid_a6000) sp="$S/convolution_A6000.json.gz"; opts="--space grid";;
    grid_big) sp="$S/convolution_A100.json.gz $S/dedispersion_A100.json.gz"; opts="--space grid";;
  esac
  left=$(( LIMIT - ($(date +%s) - t0) ))
  [ "$left" -gt 30 ] || { echo "skip $name (no time left)" >> "$OUT/log.txt"; continue; }
  s=$(date +%s)
  timeout "$left" ${PY:-python3} -m scripts.bench_search $sp $opts --techniques "${TECHS:?}" \
    --peers '' --repeats 25 --seed "${SEED:?}" --random-repeats 200 --jobs "$J" --json-out "$OUT/${TAG:-s36}_$name.json" \
    --markdown "$OUT/${TAG:-s36}_$name.md" > "$OUT/${TAG:-s36}_$name.log" 2>&1
  echo "$name rc $? $(( $(date +%s) - s )) s" >> "$OUT/log.txt"
done
cat "$OUT/log.txt"
