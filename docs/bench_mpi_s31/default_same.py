"""The default ensemble on bench_mpi's space (no failures): md5 of 300 seeded proposals; equal across trees = same.

    PYTHONPATH=<tree> python docs/bench_mpi_s31/default_same.py

Session 31 changed only what the GP does with the failure model (threshold 0.7 beside TPE); with no failure the
model answers 1 everywhere, so the proposals on bench_mpi's never-failing objective must be the same.
"""
import hashlib
import json

import numpy as np

from ensemble.registry import create_technique
from ensemble.space import Integer, SearchSpace
from ensemble.technique import Trial

sp = SearchSpace().add(Integer("a", 0, 999), Integer("b", 0, 999))
t = create_technique("default", seed=5)
for arm in getattr(t, "arms", []):
    if hasattr(arm, "compute_share"):
        arm.compute_share = None  # no retirement decided by this machine's timing
t.bind(sp, budget=300, rng=np.random.default_rng(5))
out = []
for i in range(300):
    c = t.propose(1)[0]
    v = float((c["a"] - 300) ** 2 + (c["b"] - 700) ** 2)
    t.observe(Trial(config=c, config_hash=t.hash(c), value=v, state="OK", technique="x", evaluation=i + 1, cost=0.2))
    out.append(json.dumps(c, sort_keys=True))
print(hashlib.md5("\n".join(out).encode()).hexdigest())
