"""4-D Rosenbrock on [-3, 3]^4: our default ensemble next to OpenTuner 0.8.8's.

Why: a continuous valley where the optimum (0 at x = 1) must be polished to
many digits is where an ensemble without a local-refinement arm stalls
(OpenTuner 0.8.8's default reaches a median of about 0.93 at 2000
evaluations).  Both tuners get the same budget of unique evaluations and the
same seeds, in one command; OpenTuner runs through its own API in
``.bench/opentuner-venv`` (created on first use by :mod:`scripts._peers`).
Our techniques run through the real search driver on the in-memory store
(tests/techniques/driven.py: an ordinary run on ``memory://``, each
evaluation charged a fixed recorded cost so that the run does not depend on
this machine's speed).

    python -m scripts.bench_rosenbrock --evaluations 2000 --seeds 10
    python -m scripts.bench_rosenbrock --techniques default,NelderMead --no-peer
    python -m scripts.bench_rosenbrock --no-peer --jobs 10   # the seeds in 10 processes
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent


def rosenbrock(config: dict[str, Any]) -> float:
    """Rosenbrock (1960), the n-D chained form: sum 100 (x_{i+1} - x_i^2)^2 + (1 - x_i)^2."""
    x = np.array([config[f"x{i}"] for i in range(4)], dtype=float)
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))


def _run_one(name: str, evaluations: int, seed: int) -> float:
    from ensemble.registry import create_technique
    from ensemble.space import Float, SearchSpace
    from tests.techniques.driven import run_technique

    space = SearchSpace().add(*[Float(f"x{i}", -3.0, 3.0) for i in range(4)])
    return run_technique(create_technique(name, seed=seed), space, rosenbrock, budget=evaluations,
                         seed=seed).best_value


def run_ours(name: str, evaluations: int, seeds: Sequence[int], jobs: int = 1) -> list[float]:
    """Best value per seed; ``jobs`` > 1 runs the seeds in parallel processes (same results: each run is seeded)."""
    if jobs <= 1:
        return [_run_one(name, evaluations, s) for s in seeds]
    from concurrent.futures import ProcessPoolExecutor

    with ProcessPoolExecutor(max_workers=jobs) as pool:
        return list(pool.map(_run_one, [name] * len(seeds), [evaluations] * len(seeds), seeds))


def run_opentuner(evaluations: int, seeds: Sequence[int], jobs: int) -> list[float]:
    from scripts._peers import run_peer

    out = run_peer("opentuner", ROOT / "scripts" / "_bench_rosenbrock_opentuner.py",
                   [str(evaluations), ",".join(map(str, seeds)), str(jobs)])
    return [float(v) for v in out["best"]]


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.bench_rosenbrock", description=__doc__.split("\n\n")[0])
    p.add_argument("--evaluations", type=int, default=2000, help="unique evaluations per run")
    p.add_argument("--seeds", type=int, default=10, help="runs; seeds 0..N-1")
    p.add_argument("--techniques", default="default", help="comma-separated registry names")
    p.add_argument("--no-peer", action="store_true", help="skip OpenTuner")
    p.add_argument("--jobs", type=int, default=1, help="processes for our seeds (results do not depend on it)")
    p.add_argument("--peer-jobs", type=int, default=2)
    p.add_argument("--json-out", default=None)
    args = p.parse_args(argv)
    seeds = list(range(args.seeds))
    rows: dict[str, dict[str, Any]] = {}
    for name in [t for t in args.techniques.split(",") if t]:
        t0 = time.perf_counter()
        best = run_ours(name, args.evaluations, seeds, args.jobs)
        rows[name] = {"best": best, "seconds": time.perf_counter() - t0}
    if not args.no_peer:
        t0 = time.perf_counter()
        try:
            rows["OpenTuner 0.8.8 default"] = {"best": run_opentuner(args.evaluations, seeds, args.peer_jobs),
                                               "seconds": time.perf_counter() - t0}
        except (RuntimeError, OSError, ValueError, subprocess.TimeoutExpired) as exc:  # a missing peer must not hide ours
            print(f"OpenTuner skipped: {type(exc).__name__}: {str(exc)[:500]}", file=sys.stderr)
    print(f"4-D Rosenbrock on [-3,3]^4, {args.evaluations} unique evaluations, seeds 0..{args.seeds - 1}")
    print(f"{'tuner':28s} {'median best':>12s} {'worst':>11s} {'<=1e-6':>7s} {'seconds':>8s}")
    for label, row in rows.items():
        best = row["best"]
        row["median"] = statistics.median(best)
        row["hits"] = sum(v <= 1e-6 for v in best)
        print(f"{label:28s} {row['median']:12.3g} {max(best):11.3g} {row['hits']:4d}/{len(best):<2d} "
              f"{row['seconds']:8.1f}")
    ours = rows.get("default")
    peer = rows.get("OpenTuner 0.8.8 default")
    if ours and peer and ours["median"] > 0:
        print(f"median ratio OpenTuner / ours: {peer['median'] / ours['median']:.3g}")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
