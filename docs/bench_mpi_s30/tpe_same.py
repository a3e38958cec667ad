"""TPE and Surrogate: md5 of 520 seeded proposals (with failures); equal across two trees = identical proposals.

    PYTHONPATH=<tree> python docs/bench_mpi_s30/tpe_same.py
"""
import hashlib, json, numpy as np, time
from ensemble.registry import create_technique
from ensemble.space import SearchSpace, Integer, Enum
from ensemble.technique import Trial
sp = SearchSpace().add(Integer("x0", 0, 999), Integer("x1", 0, 999), Enum("e", ["a", "b", "c"]))
out = []
for name in ("TPE", "Surrogate"):
    t = create_technique(name, seed=3)
    t.bind(sp, budget=400, rng=np.random.default_rng(3))
    t0 = time.perf_counter()
    for i in range(400 if name == "TPE" else 120):
        c = t.propose(1)[0]
        v = float((c["x0"]-300)**2 + (c["x1"]-700)**2) + (c["e"] != "b") * 1e4
        if (c["x0"] + c["x1"]) % 7 == 0: v = float("inf"); st = "FAILED"
        else: st = "OK"
        t.observe(Trial(config=c, config_hash=t.hash(c), value=v, state=st, technique=name, evaluation=i+1, cost=0.2))
        out.append(json.dumps(c, sort_keys=True))
    print(name, round(time.perf_counter() - t0, 2), "s")
print(hashlib.md5("\n".join(out).encode()).hexdigest())
