"""Session 29 reading (issue 18): late picks of the default in grid mode by the failure forest's P at pick time.

    PYTHONPATH=. python docs/bench_search_issue18/calib_s29/bands.py convolution_A100 1000
"""
import math, collections, sys
import numpy as np
from apps.replay import load_space
from scripts.bench_search import Methodology, _ReplayFunction, _stall_guard
from ensemble.driver import RunSession
from ensemble.settings import RunSettings
from ensemble.storage import open_storage
from ensemble.registry import create_technique
from techniques.feasibility import FeasibilityModel
sp = sys.argv[1]; seed = int(sys.argv[2])
space = load_space(f"../shared/data/spaces/{sp}.json.gz")
m = Methodology(space.scalars("grid"))
app = _ReplayFunction(space, "grid")
tech = create_technique("default", seed=seed)
_stall_guard(tech, app.space(), 2000)
st = open_storage("memory://")
s = RunSession(app, RunSettings(database="memory://", test_limit=m.budget, seed=seed, quiet=True, run_name="x"),
               app_ref="x", technique=tech, storage=st)
s.run()
rows = [r for r in st.trials(s.run_id) if not r.duplicate]
ss = app.space()
fm = FeasibilityModel.for_space(ss, kind="forest")
ps = []
for k, r in enumerate(rows):
    x = np.asarray(ss.to_unit(dict(r.config)), dtype=float)
    if k >= len(rows) // 5:
        ps.append((float(fm.p_success(x[None, :])[0]), str(r.state) == "OK", tuple(r.config[n] for n in space.names) in space.records))
    fm.add(x, str(r.state))
ps = np.array(ps, dtype=float)
fail = ps[:, 1] == 0
print("late picks", len(ps), "failures", int(fail.sum()))
for lo, hi in ((0, .5), (.5, .6), (.6, .7), (.7, .8), (.8, .9), (.9, 1.01)):
    sel = (ps[:, 0] >= lo) & (ps[:, 0] < hi)
    print(f"P in [{lo},{hi}): picks {int(sel.sum())}, failed {int((sel & fail).sum())}")
