"""Session 29 reading (issue 18): the late failures of the default in grid mode, by kind (restriction or recorded).

    PYTHONPATH=. python docs/bench_search_issue18/calib_s29/late_failure_kinds.py convolution_A100 1000,1001
"""
import collections, sys
from docs.bench_search_issue18.calib_s29.replay_run import load, run
sp = sys.argv[1]; seeds = [int(s) for s in sys.argv[2].split(",")]
space = load(sp)
for seed in seeds:
    rows, _, _ = run(space, "grid", seed)
    late = rows[len(rows) // 5:]
    kinds = collections.Counter()
    for r in late:
        if str(r.state) == "OK":
            continue
        key = tuple(r.config[n] for n in space.names)
        rec = space.records.get(key)
        kinds["unrecorded (restriction)" if rec is None else f"recorded {rec.reason}"] += 1
    print(sp, seed, len(late), {k: round(v / len(late), 3) for k, v in kinds.items()}, flush=True)
