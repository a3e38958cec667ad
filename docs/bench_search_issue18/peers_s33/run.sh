#!/usr/bin/env bash
# Session 33: the default of record beside OpenTuner 0.8.8 and Kernel Tuner 1.5.0, one bench_search command per
# space and mode (issue 18's first "must show" line), on the GPU machine's 16 CPUs (no GPU used). Seeds 1000-1024
# (bench_search's default, as the earlier peer rows in docs/BENCHMARKS.md). Device call (carry [".whl"], with
# .whl/spaces/ = ../shared/data/spaces/*.json.gz and .whl/kt/ + .whl/opentuner/ from scripts/fetch_gpu_wheels.sh):
# The checkout (44 MB on disk) and the carry must stay under 64 MiB, so session 33 carried [".whlp"] instead: the
# root wheels gpu_env needs here (sqlalchemy, greenlet, typing_extensions, alembic, deap, moocore, cffi, pycparser),
# kt/ without pymoo, cma, autograd and the progress-bar wheels (the three strategies run never import them),
# opentuner/, and spaces/ holding only the call's spaces. The four calls (call1..call4/ here):
#   ln -s .whlp .whl; . scripts/gpu_env.sh > /tmp/env.txt 2>&1; LIMIT=540 JOBS="file:convolution_W7800 file:pnpoly_RTX2080Ti file:convolution_A6000 grid:convolution_W7800 grid:pnpoly_RTX2080Ti" bash docs/bench_search_issue18/peers_s33/run.sh
#   ... LIMIT=555 JOBS="file:dedispersion_A100" ...;  ... LIMIT=560 JOBS="grid:convolution_A6000" ...;
#   ... LIMIT=420 OUR_JOBS=8 JOBS="grid:dedispersion_A100" ...
# (then `cd $OUT && tar -czf peersN.tgz *.json *.md *.log *.txt`: the device tool returns few files). Source
# gpu_env.sh directly, never through a pipe: piped, it runs in a subshell and its exports are lost.
# Each command gets what is left of LIMIT seconds (from the call's start) as --peer-timeout, so a peer that cannot
# finish keeps the seeds it finished ("k of 25 seeds, time limit"); ours run with --run-timeout off.
set -u
OUT=${OUT:-out-gpu}; mkdir -p "$OUT"
t0=$(date +%s); LIMIT=${LIMIT:-560}; PJ=${PEER_JOBS:-16}; J=${OUR_JOBS:-4}
nproc > "$OUT/nproc.txt"; git rev-parse HEAD > "$OUT/commit.txt" 2>/dev/null
for job in ${JOBS:?JOBS="mode:space ..."}; do
  mode=${job%%:*}; sp=${job#*:}
  left=$(( LIMIT - ($(date +%s) - t0) - 15 ))
  [ "$left" -gt 30 ] || { echo "skip $job (no time left)" | tee -a "$OUT/log.txt"; continue; }
  s=$(date +%s)
  ${PY:-python3} -m scripts.bench_search .whl/spaces/$sp.json.gz --space "$mode" --techniques default --repeats 25 \
    --random-repeats 200 --jobs "$J" --peer-jobs "$PJ" --peer-timeout "$left" --kt-strategies genetic_algorithm,pso,dual_annealing \
    --json-out "$OUT/${mode}_$sp.json" --markdown "$OUT/${mode}_$sp.md" > "$OUT/${mode}_$sp.log" 2>&1
  echo "$job rc $? $(( $(date +%s) - s )) s (peer limit $left s)" | tee -a "$OUT/log.txt"
done
