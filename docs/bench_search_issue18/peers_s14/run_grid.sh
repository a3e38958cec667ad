cd /work/main
while pgrep -f /tmp/peers/run.sh > /dev/null; do sleep 5; done
S=../shared/data/spaces
for sp in convolution_W7800 pnpoly_RTX2080Ti; do
  /usr/bin/time -f "$sp grid %e s" .venv/bin/python -m scripts.bench_search $S/$sp.json.gz --space grid --techniques default --repeats 25 --random-repeats 200 --jobs 1 --peer-jobs 1 --json-out /tmp/peers/grid_$sp.json --markdown /tmp/peers/grid_$sp.md
done
echo DONE2
