cd /work/main
export PYTHONPATH=docs/bench_search_issue18
S=../shared/data/spaces
T=default,variants_s14:DefThr07,variants_s14:DefThr07Exp02
for sp in convolution_W7800 pnpoly_RTX2080Ti convolution_A6000 dedispersion_A100 convolution_A100; do
  nice -n 5 .venv/bin/python -m scripts.bench_search $S/$sp.json.gz --space grid --techniques $T --peers '' --repeats 25 --random-repeats 200 --jobs 1 --json-out /tmp/h18/grid_$sp.json --markdown /tmp/h18/grid_$sp.md
done
for sp in pnpoly_RTX2080Ti dedispersion_A100; do
  nice -n 5 .venv/bin/python -m scripts.bench_search $S/$sp.json.gz --space file --techniques $T --peers '' --repeats 25 --random-repeats 200 --jobs 1 --json-out /tmp/h18/file_$sp.json --markdown /tmp/h18/file_$sp.md
done
echo DONE
