# Session 30: the new default (TPE partner + calibrated forest) beside OpenTuner 0.8.8 and Kernel Tuner 1.5 in one
# command per space and mode, as sessions 14-18 ran the earlier default (peers_s14 ... peers_s18): the two spaces
# that take minutes (conv W7800, pnpoly), seeds 1000-1024 (bench_search's default), file and grid mode.
# Peers' venvs: python -m scripts._peers.   Run from the repository root: bash docs/bench_search_issue18/peers_s30/run.sh
set -u
S=../shared/data/spaces
D=docs/bench_search_issue18/peers_s30
for mode in file grid; do
  rr=200  # as sessions 14-18
  for sp in convolution_W7800 pnpoly_RTX2080Ti; do
    /usr/bin/time -f "$mode $sp %e s" .venv/bin/python -m scripts.bench_search $S/$sp.json.gz --space $mode \
      --techniques default --repeats 25 --random-repeats $rr --jobs 1 --peer-jobs 1 \
      --json-out $D/${mode}_$sp.json --markdown $D/${mode}_$sp.md
  done
done
echo DONE
