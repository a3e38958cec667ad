#!/usr/bin/env bash
# Session 34: the confirming runs of rule.md on the GPU machine's 16 CPUs (no GPU used). Device call, carry [".whl"]
# (.whl/spaces/ = ../shared/data/spaces/*.json.gz):
#   . scripts/gpu_env.sh > /tmp/env.txt 2>&1; MODES="file" bash docs/bench_search_issue18/div_s34/run.sh
# Source gpu_env.sh directly, never through a pipe (its exports would be lost in a subshell).
set -u
OUT=${OUT:-out-gpu}; mkdir -p "$OUT"
nproc > "$OUT/nproc.txt"; git rev-parse HEAD > "$OUT/commit.txt" 2>/dev/null
for mode in ${MODES:-file grid}; do
  r=200; [ "$mode" = grid ] && r=100
  s=$(date +%s)
  ${PY:-python3} -m scripts.bench_search .whl/spaces/*.json.gz --space "$mode" \
    --techniques default,docs.bench_search_issue18.div_s34.variant:Unit --peers '' --repeats 25 --seed 8800 \
    --random-repeats "$r" --jobs "${JOBS:-16}" --json-out "$OUT/${mode}25.json" --markdown "$OUT/${mode}25.md" \
    > "$OUT/${mode}25.log" 2>&1
  echo "$mode rc $? $(( $(date +%s) - s )) s" | tee -a "$OUT/log.txt"
done
