"""Session 29 reading (issue 18): late picks of the default in grid mode by the failure forest's P at pick time.

    PYTHONPATH=. python docs/bench_search_issue18/calib_s29/bands.py convolution_A100 1000
"""
import sys
import numpy as np
from docs.bench_search_issue18.calib_s29.replay_run import load, run
from techniques.feasibility import FeasibilityModel
sp = sys.argv[1]; seed = int(sys.argv[2])
space = load(sp)
rows, ss, m = run(space, "grid", seed)
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
