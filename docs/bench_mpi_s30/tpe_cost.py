"""TPE and BayesOpt milliseconds per proposal on bench_mpi's 2-D 1000^2 space, 1280 results (session 30).

    PYTHONPATH=<tree> python docs/bench_mpi_s30/tpe_cost.py   (run once per tree: before and after a change)
"""
import time, numpy as np
from ensemble.registry import create_technique
from ensemble.space import SearchSpace, Integer
from ensemble.technique import Trial
sp = SearchSpace().add(Integer("x0", 0, 999), Integer("x1", 0, 999))
for name in ("TPE", "BayesOpt"):
    t = create_technique(name, seed=1)
    t.bind(sp, budget=1280, rng=np.random.default_rng(1))
    rng = np.random.default_rng(2)
    times = []
    for i in range(1280):
        t0 = time.perf_counter()
        c = t.propose(1)[0]
        times.append(time.perf_counter() - t0)
        v = float((c["x0"]-300)**2 + (c["x1"]-700)**2)
        t.observe(Trial(config=c, config_hash=t.hash(c), value=v, state="OK", technique=name, evaluation=i+1, cost=0.2))
    a = np.array(times)*1000
    print(name, "ms per propose: first 100 %.2f, 500-600 %.2f, last 100 %.2f" % (a[:100].mean(), a[500:600].mean(), a[-100:].mean()))
