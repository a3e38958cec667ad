cd /work/main
S=../shared/data/spaces
for spec in file:convolution_A6000 grid:convolution_A6000 file:dedispersion_A100; do
  mode=${spec%%:*}; sp=${spec#*:}
  echo "start $mode $sp $(date -u +%H:%M:%S)"
  /usr/bin/time -f "$sp $mode %e s" nice -n 5 .venv/bin/python -m scripts.bench_search $S/$sp.json.gz --space $mode --techniques default --repeats 25 --random-repeats 200 --jobs 1 --peer-jobs 2 --json-out /tmp/peers15/${mode}_$sp.json --markdown /tmp/peers15/${mode}_$sp.md
done
echo DONE $(date -u +%H:%M:%S)
