set -x
cd /work/main
P=".venv/bin/python -m scripts.bench_doe hls --design crc32 --scenario balanced --order seed --jobs 1 --cache docs/doe_results/hls_crc32_balanced_cache.json"
nice -n 10 $P --seed 24 --seeds 1 --budgets 25,56 --only dlmt --json-out /tmp/dev/here/r1.json
nice -n 10 $P --seed 22 --seeds 1 --budgets 56 --only random --json-out /tmp/dev/here/r2.json
nice -n 10 $P --seed 23 --seeds 1 --budgets 56 --only cstuner-ensemble --json-out /tmp/dev/here/r3.json
nice -n 10 $P --seed 11 --seeds 1 --budgets 125 --only cstuner-ensemble --json-out /tmp/dev/here/r4.json
nice -n 10 $P --seed 12 --seeds 2 --budgets 125 --only random --json-out /tmp/dev/here/r5.json
echo DONE
