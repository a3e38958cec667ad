cd /work/main
S=../shared/data/spaces
for sp in convolution_W7800 pnpoly_RTX2080Ti convolution_A6000 dedispersion_A100; do
  /usr/bin/time -f "$sp %e s" .venv/bin/python -m scripts.bench_search $S/$sp.json.gz --space file --techniques default --repeats 25 --random-repeats 200 --jobs 1 --peer-jobs 1 --json-out /tmp/peers/file_$sp.json --markdown /tmp/peers/file_$sp.md
done
echo DONE
