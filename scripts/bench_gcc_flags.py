"""Tune gcc flags and params for each bundled C benchmark; report speedup over -O3.

    python -m scripts.bench_gcc_flags [--test-limit 25] [--programs matmul stencil3d sort kahan]

For each program: a tuning run of ``--test-limit`` unique builds (each build
checked against the -O2 output; wrong output is INVALID), then the best
configuration and the plain -O1/-O2/-O3 builds are compiled once and run
alternately ``--rounds`` times, so every ratio compares medians measured side
by side in the same command.  The time is the program's own kernel time.
The machine is shared (2 cores, other people's jobs): budgets are small and
the numbers are medians (and minima, the least disturbed runs) of the
side-by-side reruns; read them as indications, not as a study.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from typing import Any


def side_by_side(app: Any, best: dict[str, Any], rounds: int) -> dict[str, list[float]]:
    ev = app.evaluator
    repeats, ev.repeats = ev.repeats, 1
    builds = {f"-O{lvl}": ev.compile_flags([f"-O{lvl}"]) for lvl in ("1", "2", "3")}
    builds["tuned"] = ev.compile(best)
    times: dict[str, list[float]] = {k: [] for k in builds}
    try:
        for _ in range(rounds):
            for name, build in builds.items():
                res = ev.run(build, keep=True)
                if res.ok:
                    times[name].append(res.time)
    finally:
        ev.repeats = repeats
        for b in builds.values():
            if b.exe and os.path.exists(b.exe):
                os.unlink(b.exe)
    return times


def main(argv: list[str] | None = None) -> int:
    from apps.gcc_flags.app import GccFlagsApp
    from apps.gcc_flags.programs import PROGRAMS
    from ensemble.driver.local import run_app
    from ensemble.settings import RunSettings

    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--programs", nargs="*", default=list(PROGRAMS))
    p.add_argument("--test-limit", type=int, default=25)
    p.add_argument("--rounds", type=int, default=15, help="side-by-side runs of each build")
    p.add_argument("--technique", default="default")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--database", default="sqlite:///.bench/gcc_flags.db")
    p.add_argument("--json", default=".bench/gcc_flags.json")
    ns = p.parse_args(argv)
    os.makedirs(".bench", exist_ok=True)
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())} on {platform.node()} ({os.cpu_count()} CPUs), "
          f"test_limit={ns.test_limit}, rounds={ns.rounds}, technique={ns.technique}")
    print(f"{'program':10s} {'evals':>5s} {'bad':>4s} {'-O1 ms':>8s} {'-O2 ms':>8s} {'-O3 ms':>8s} {'tuned ms':>8s} "
          f"{'vs -O3':>7s} {'vs -O2':>7s}")
    rows = []
    for name in ns.programs:
        app = GccFlagsApp(program=name, repeats=5)
        t0 = time.monotonic()
        settings = RunSettings(test_limit=ns.test_limit, database=ns.database, seed=ns.seed, quiet=True,
                               technique=ns.technique, run_name=f"gcc-{name}-{int(time.time())}")
        result = run_app(app, settings)
        tune_s = time.monotonic() - t0
        if result.best_config is None:
            raise RuntimeError(f"{name}: no valid build in the budget")
        times = side_by_side(app, result.best_config, ns.rounds)
        med = {k: statistics.median(v) if v else float("nan") for k, v in times.items()}
        low = {k: min(v) if v else float("nan") for k, v in times.items()}
        row = {"program": name, "evaluations": result.evaluations, "failures": result.failures,
               "tune_s": round(tune_s, 1), "best_flags": app.render(result.best_config), "times": times,
               "median": med, "min": low, "speedup_vs_O3": med["-O3"] / med["tuned"],
               "speedup_vs_O2": med["-O2"] / med["tuned"], "min_speedup_vs_O3": low["-O3"] / low["tuned"]}
        rows.append(row)
        print(f"{name:10s} {result.evaluations:5d} {result.failures:4d} {med['-O1']*1e3:8.2f} {med['-O2']*1e3:8.2f} "
              f"{med['-O3']*1e3:8.2f} {med['tuned']*1e3:8.2f} {row['speedup_vs_O3']:6.2f}x {row['speedup_vs_O2']:6.2f}x"
              f"   (min-based vs -O3: {row['min_speedup_vs_O3']:.2f}x)", flush=True)
        print(f"    tuned flags ({len(row['best_flags'])} tokens): {' '.join(row['best_flags'][:12])}"
              + (" ..." if len(row["best_flags"]) > 12 else ""), flush=True)
        app.evaluator.close()
    with open(ns.json, "w") as f:
        json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
