import sys, numpy as np
sys.path.insert(0, '.')
from apps.replay import load_space
from techniques.feasibility import FeasibilityModel
for path in sys.argv[1:]:
    space = load_space(path); ss = space.to_search_space("grid"); keys = list(space.keys("grid"))
    ok = np.isfinite(space.scalars("grid"))
    X = np.vstack([ss.to_unit(dict(zip(space.names, k))) for k in keys])
    for n in (50, 150, 400):
        res = {}
        for lab, opt in (("pairs", {"log_values": []}), ("+logs", {})):
            acc = []
            for seed in range(5):
                rng = np.random.default_rng(seed); tr = rng.choice(len(keys), n, replace=False)
                te = np.setdiff1d(np.arange(len(keys)), tr)
                m = FeasibilityModel.for_space(ss, kind="forest", **opt)
                for i in tr: m.add(X[i], "OK" if ok[i] else "FAILED")
                p = m.p_success(X[te]); y = ok[te]; keep = p >= 0.5
                acc.append((((p - y) ** 2).mean(), 1 - y[keep].mean(), keep[y].mean()))
            res[lab] = np.round(np.mean(acc, 0), 3).tolist()
        print(path.split('/')[-1][:20], n, 'brier/fail-accepted/valid-kept', res)
