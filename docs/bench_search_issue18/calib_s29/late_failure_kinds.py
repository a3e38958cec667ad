"""Session 29 reading (issue 18): the late failures of the default in grid mode, by kind (restriction or recorded).

    PYTHONPATH=. python docs/bench_search_issue18/calib_s29/late_failure_kinds.py convolution_A100 1000,1001
"""
import math, collections, sys
from apps.replay import load_space
from scripts.bench_search import Methodology, _ReplayFunction, _stall_guard
from ensemble.driver import RunSession
from ensemble.settings import RunSettings
from ensemble.storage import open_storage
from ensemble.registry import create_technique
sp = sys.argv[1]; seeds = [int(s) for s in sys.argv[2].split(",")]
space = load_space(f"../shared/data/spaces/{sp}.json.gz")
m = Methodology(space.scalars("grid"))
for seed in seeds:
    app = _ReplayFunction(space, "grid")
    tech = create_technique("default", seed=seed)
    _stall_guard(tech, app.space(), 2000)
    st = open_storage("memory://")
    s = RunSession(app, RunSettings(database="memory://", test_limit=m.budget, seed=seed, quiet=True, run_name="x"),
                   app_ref="x", technique=tech, storage=st)
    s.run()
    rows = [r for r in st.trials(s.run_id) if not r.duplicate]
    late = rows[len(rows) // 5:]
    kinds = collections.Counter()
    for r in late:
        if str(r.state) == "OK":
            continue
        key = tuple(r.config[n] for n in space.names)
        rec = space.records.get(key)
        kinds["unrecorded (restriction)" if rec is None else f"recorded {rec.reason}"] += 1
    print(sp, seed, len(late), {k: round(v / len(late), 3) for k, v in kinds.items()}, flush=True)
