"""Milliseconds per BayesOpt pick as the observations grow (issue 18: the model under many workers).

Why: under ``mpirun -n 32`` with a 0.2 s objective the search must answer a
request every ~6 ms; a pick whose cost grows with the observations is what
makes the default hand its trials to other arms (the step-aside rule).  This
times BayesOpt alone, one process, on bench_mpi's space (two integer
parameters, 1000 values each: too large to enumerate, so the candidate pool
is sampled) and on an enumerable one (64 x 64), telling it a smooth
objective after every pick.  Run it at two commits side by side:

    python -m scripts.bench_bo_pick --observations 1100 --window 60
"""

from __future__ import annotations

import argparse
import json
import math
import time

from ensemble.space import Integer, SearchSpace
from ensemble.technique import Trial
from techniques.bayes_opt import BayesOpt


def _objective(c: dict) -> float:
    a, b = c["a"] / 1000.0, c["b"] / 1000.0
    return 1.0 + (a - 0.3) ** 2 + (b - 0.7) ** 2 + 0.05 * math.sin(27.0 * a) ** 2


def measure(side: int, observations: int, window: int, seed: int) -> dict[str, float]:
    space = SearchSpace(Integer("a", 0, side - 1), Integer("b", 0, side - 1))
    bo = BayesOpt(seed=seed)
    bo.bind(space, budget=observations + window)
    scale = 1000.0 / side
    marks: dict[str, float] = {}
    n, t0 = 0, time.perf_counter()
    while n < observations + window:
        if n == observations:
            t0 = time.perf_counter()
        for c in bo.propose(1):
            v = _objective({"a": c["a"] * scale, "b": c["b"] * scale})
            bo.observe(Trial(config=c, config_hash=bo.hash(c), value=v, state="OK", technique="BayesOpt"))
            n += 1
    marks["ms_per_pick"] = 1000.0 * (time.perf_counter() - t0) / window
    return marks


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.bench_bo_pick", description=__doc__.split("\n\n")[0])
    ap.add_argument("--observations", type=int, default=1100, help="picks before the timed window")
    ap.add_argument("--window", type=int, default=60, help="picks timed")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    out = {f"side {side}": measure(side, args.observations, args.window, args.seed) for side in (1000, 64)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
