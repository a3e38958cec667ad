"""Milliseconds per BayesOpt pick as the observations grow (issue 18: the model under many workers).

Why: under ``mpirun -n 32`` with a 0.2 s objective the search must answer a
request every ~6 ms; a pick whose cost grows with the observations is what
makes the default hand its trials to other arms (the step-aside rule).  This
times BayesOpt alone, one process, on bench_mpi's space (two integer
parameters, 1000 values each: too large to enumerate, so the candidate pool
is sampled) and on an enumerable one (64 x 64), telling it a smooth
objective after every pick.  Run it at two commits side by side:

    python -m scripts.bench_bo_pick --observations 1100 --window 60

``--workers 8,32`` instead stands in for W workers in one process (issue 18
point 3): on bench_mpi's space and objective (two integer parameters, 1000
values each, sampled pool; squared distance to (7, 7)) BayesOpt with the
default ensemble's ``compute_share`` is asked for a batch of W (``--queue``),
then for one configuration after each result; every evaluation costs 0.2 s,
so at linear scaling a result arrives every 0.2 / W s.  Results arrive in
the order they were proposed (equal costs), so the picks do not depend on
the timing.  Reported per W: the model's running compute per result (mean,
p95, max, the largest mean over a 32-result window: what
``BayesOpt._charge_compute`` compares with the gap), after how many
results its rule would retire the model (the rule is judged, not obeyed:
the run goes on), the refits and pool rebuilds, and a simulated timeline
(one driver core answering the results in order) with the throughput
against linear and the share of worker time spent waiting:

    nice python -m scripts.bench_bo_pick --workers 8,32 --results 1280 [--spread [on|auto]]

(``--spread``: with ``BayesOpt(spread_refits=True)``; ``--spread auto``: ``spread_refits="auto"``.)  The simulated
timeline is given for a first batch of W (``simulated``) and of 1.5 W, the
MPI driver's queue (``simulated_queue_1.5w``).
"""

from __future__ import annotations

import argparse
import json
import math
import time
from collections import deque

from ensemble.space import Integer, SearchSpace
from ensemble.technique import Trial
from techniques.bayes_opt import WINDOW, BayesOpt


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



# -- many workers in one process (issue 18 point 3: does the model keep up with W workers?) -------------
#: bench_mpi's sleeping objective: the seconds one evaluation costs
EVAL_SECONDS = 0.2


def _mpi_objective(c: dict) -> float:
    """bench_mpi's objective (``Sleeper.run``): squared distance to (7, 7)."""
    return float((c["a"] - 7) ** 2 + (c["b"] - 7) ** 2)


class _Watched(BayesOpt):
    """BayesOpt whose retirement rule is judged but not obeyed: the first verdict is kept, the run goes on.

    ``_charge_compute`` is the technique's own (the rule under test); when it
    retires the model, the posterior and pool it frees are put back and
    ``retired`` cleared, so the stand-in measures the whole run and reports
    when the rule would have fired.  Works on any commit whose rule frees the
    same attributes (the ones restored below, those that exist).
    """

    first_retired: tuple[int, str] | None = None
    rebuilds = 0

    def _charge_compute(self, t0: float) -> None:
        names = [n for n in ("_gp", "_job", "_pool_configs", "_pool_hashes", "_pool_index", "_Xp", "_avail")
                 if hasattr(self, n)]
        keep = [getattr(self, n) for n in names]
        super()._charge_compute(t0)
        if self.retired is not None:
            if self.first_retired is None:
                self.first_retired = (len(self._obs), self.retired)
            for n, v in zip(names, keep, strict=True):
                setattr(self, n, v)
            self.retired = None

    def _resample_pool(self) -> None:
        self.rebuilds += 1
        super()._resample_pool()


def _quantile(xs: list[float], q: float) -> float:
    s = sorted(xs)
    return s[min(len(s) - 1, max(0, math.ceil(q * len(s)) - 1))]


def simulate(steps: list[float], setup: float, workers: int, queue: int) -> dict[str, float]:
    """Simulated time of a run whose driver spends ``steps[i]`` seconds after result ``i`` (one core).

    ``workers`` each measure for EVAL_SECONDS; ``queue`` requests are handed
    out at the start (after ``setup``), then the driver answers each result,
    in the order they arrive, with one request.  A worker takes the oldest
    waiting request, or waits for the next answer.  Returns the simulated
    makespan, the throughput against the linear ``workers / EVAL_SECONDS``
    and the share of worker time spent waiting.
    """
    import heapq

    ready = [setup] * queue  # times the waiting requests became available, oldest first
    free = [0.0] * workers  # heap of the times the workers become free
    heapq.heapify(free)
    finishes: list[float] = []  # heap of result times
    driver, busy, waiting = 0.0, 0.0, 0.0
    handed = 0
    for i in range(len(steps)):
        while handed < len(ready) and len(finishes) < workers:  # every free worker takes a waiting request
            w = heapq.heappop(free)
            start = max(w, ready[handed])
            waiting += start - w
            handed += 1
            heapq.heappush(finishes, start + EVAL_SECONDS)
            busy += EVAL_SECONDS
        t = heapq.heappop(finishes)
        heapq.heappush(free, t)
        driver = max(driver, t) + steps[i]
        if len(ready) < len(steps):
            ready.append(driver)
    end = max(driver, max(free))
    n = len(steps)
    return {"makespan_s": round(end, 3), "x_linear": round((n / end) / (workers / EVAL_SECONDS), 3),
            "worker_wait_share": round(waiting / (waiting + busy), 3)}


def measure_workers(workers: int, results: int, seed: int, queue: int | None = None, side: int = 1000,
                    options: dict | None = None) -> dict:
    """The model under ``workers`` simulated workers on bench_mpi's space, one process (see ``main``)."""
    space = SearchSpace(Integer("a", 0, side - 1), Integer("b", 0, side - 1))
    bo = _Watched(seed=seed, compute_share=0.25, **(options or {}))
    bo.bind(space, budget=results)
    bo.workers = workers
    queue = workers if queue is None else queue
    clock = time.perf_counter
    t0 = clock()
    flight = deque(bo.propose(min(queue, results)))
    setup_wall = clock() - t0
    proposed = len(flight)
    compute, walls, fits_at, rebuilt_at = [], [], [], []
    last = bo.compute_seconds
    n = 0
    while flight and n < results:
        c = flight.popleft()
        fits, rebuilds = bo.fits, bo.rebuilds
        t0 = clock()
        bo.observe(Trial(config=c, config_hash=bo.hash(c), value=_mpi_objective(c), state="OK",
                         technique="BayesOpt", evaluation=n + 1, cost=EVAL_SECONDS))
        new = bo.propose(1) if proposed < results else []
        walls.append(clock() - t0)
        proposed += len(new)
        flight.extend(new)
        compute.append(bo.compute_seconds - last)
        last = bo.compute_seconds
        n += 1
        if bo.fits != fits:
            fits_at.append(n)
        if bo.rebuilds != rebuilds:
            rebuilt_at.append(n)
    gap = EVAL_SECONDS / workers
    windows = [sum(compute[i - WINDOW:i]) / WINDOW for i in range(WINDOW, len(compute) + 1)]
    span = bo._window() if hasattr(bo, "_window") else WINDOW  # the rule's window on this commit
    rule_windows = [sum(compute[i - span:i]) / span for i in range(span, len(compute) + 1)]
    ms = [1000.0 * x for x in compute]
    out = {
        "workers": workers, "queue": queue, "results": n, "gap_ms": round(1000 * gap, 3),
        "compute_ms": {"mean": round(sum(ms) / len(ms), 3), "p95": round(_quantile(ms, 0.95), 3),
                       "max": round(max(ms), 3),
                       "max_window_mean": round(1000 * max(windows), 3) if windows else None,
                       "rule_window": span,
                       "max_rule_window_mean": round(1000 * max(rule_windows), 3) if rule_windows else None},
        "wall_ms_per_result": {"mean": round(1000 * sum(walls) / len(walls), 3),
                               "p95": round(1000 * _quantile(walls, 0.95), 3), "max": round(1000 * max(walls), 3)},
        "compute_ms_by_stretch": [round(1000 * sum(compute[i:i + 100]) / len(compute[i:i + 100]), 2)
                                  for i in range(0, n, 100)],
        "setup_s": round(bo.setup_seconds, 3), "first_batch_wall_s": round(setup_wall, 3),
        "would_retire_after": None if bo.first_retired is None else bo.first_retired[0],
        "retire_reason": None if bo.first_retired is None else bo.first_retired[1],
        "windows_over_gap": sum(w > gap for w in windows),
        "spread_since": getattr(bo, "spread_since", None),
        "fits": bo.fits, "fits_at": fits_at, "pool_rebuilds": bo.rebuilds, "rebuilt_at": rebuilt_at,
        "best": bo.best_value,
        "simulated": simulate(walls, setup_wall, workers, queue),
        "simulated_queue_1.5w": simulate(walls, setup_wall, workers, workers + max(1, workers // 2)),
    }
    extra = getattr(bo, "schedule_state", None)
    if callable(extra):
        out["schedule"] = extra()
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m scripts.bench_bo_pick", description=__doc__.split("\n\n")[0])
    ap.add_argument("--observations", type=int, default=1100, help="picks before the timed window")
    ap.add_argument("--window", type=int, default=60, help="picks timed")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--workers", type=lambda v: [int(w) for w in v.split(",") if w], default=None,
                    help="stand in for these numbers of workers (e.g. 8,32) instead of timing picks")
    ap.add_argument("--results", type=int, default=1280, help="with --workers: results per run (the budget)")
    ap.add_argument("--spread", nargs="?", const="on", default="off", choices=("off", "on", "auto"),
                    help="with --workers: BayesOpt(spread_refits=True) (on, or the flag alone), "
                         "spread_refits='auto' (auto), or the default (off)")
    ap.add_argument("--queue", type=float, default=1.0,
                    help="with --workers: the first batch, in workers (1: W; the MPI driver queues about 1.5 W)")
    args = ap.parse_args(argv)
    if args.workers:
        for w in args.workers:
            options = {"on": {"spread_refits": True}, "auto": {"spread_refits": "auto"}}.get(args.spread)
            print(json.dumps(measure_workers(w, args.results, args.seed, queue=max(1, round(args.queue * w)),
                                             options=options)), flush=True)
        return 0
    out = {f"side {side}": measure(side, args.observations, args.window, args.seed) for side in (1000, 64)}
    print(json.dumps(out))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
