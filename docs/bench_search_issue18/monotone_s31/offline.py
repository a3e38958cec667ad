"""Session 31 reading (issue 18): which late picks of a default run each failure model would have refused (offline).

One default grid-mode run is replayed; before each pick after the first fifth, the calibrated forest (today's
default) and the "monotone" kind, fed the same earlier outcomes, give the pick a P(success).

    PYTHONPATH=. .venv/bin/python docs/bench_search_issue18/monotone_s31/offline.py convolution_A100 1000
"""
import sys

import numpy as np

from docs.bench_search_issue18.calib_s29.replay_run import load, run
from techniques.feasibility import FeasibilityModel

sp, seed = sys.argv[1], int(sys.argv[2])
space = load(sp)
rows, ss, m = run(space, "grid", seed)
models = {k: FeasibilityModel.for_space(ss, kind=k) for k in ("calibrated", "monotone")}
out = []
for k, r in enumerate(rows):
    x = np.asarray(ss.to_unit(dict(r.config)), dtype=float)
    if k >= len(rows) // 5:
        out.append([float(mod.p_success(x[None])[0]) for mod in models.values()] + [str(r.state) == "OK"])
    for mod in models.values():
        mod.add(x, str(r.state))
a = np.array(out, dtype=float)
fail = a[:, -1] == 0
print(sp, seed, "late picks", len(a), "failed", int(fail.sum()))
for i, kind in enumerate(models):
    keep = a[:, i] >= 0.5
    print(f"  {kind:10s} P>=0.5: {int(keep.sum())} kept, {int((keep & fail).sum())} of them failing; "
          f"refused {int((~keep & fail).sum())} failures and {int((~keep & ~fail).sum())} successes; "
          f"Brier {np.mean((a[:, i] - a[:, -1]) ** 2):.3f}")
