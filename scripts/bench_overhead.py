"""Framework time per trial: ensemble-tuner beside OpenTuner 0.8.8, same problem, same command.

Problem: 4 integer parameters in 0..99 (10^8 points), a trivial objective
(squared distance, about a microsecond), a SQLite file database (ours also on
the in-memory store, ``--stores sqlite memory``), the default technique of
each tuner (``--technique Random`` for the driver's own cost), ``--trials`` trials. Framework time = wall time of
the tuning call (imports excluded, database creation included) minus the time
spent inside the objective, divided by the number of measured trials. The two
tuners alternate ``--repeats`` times; medians and their ratio are printed and,
with ``--markdown``, a table for docs/BENCHMARKS.md.

OpenTuner needs SQLAlchemy < 1.4, so it runs in its own venv under .bench/
(created on first use by scripts._peers) as a subprocess.

    python -m scripts.bench_overhead                 # 5000 trials x 3 repeats each
    python -m scripts.bench_overhead --trials 500 --repeats 1 --no-opentuner
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run_ours(trials: int, workdir: str, technique: str, seed: int, batch: int = 1,
             store: str = "sqlite") -> dict[str, Any]:
    """One run of ours through the standard drivers (parallelism 1; a SQLite file, or ``memory://``)."""
    from ensemble import Integer, SearchSpace
    from ensemble.app import TunerApp
    from ensemble.driver import make_technique, run_app
    from ensemble.settings import RunSettings

    stats: dict[str, Any] = {"objective": 0.0, "measured": 0}

    class Trivial(TunerApp):
        def space(self) -> SearchSpace:
            return SearchSpace().add(*[Integer(f"p{i}", 0, 99) for i in range(4)])

        def run(self, config: dict[str, Any], limit: float | None) -> float:
            t0 = time.perf_counter()
            value = float(sum((config[f"p{i}"] - 37) ** 2 for i in range(4))) + 1.0
            stats["measured"] += 1
            stats["objective"] += time.perf_counter() - t0
            return value

    db = os.path.join(workdir, f"ours-{time.time_ns()}.db")
    url = f"sqlite:///{db}" if store == "sqlite" else "memory://"
    settings = RunSettings(database=url, test_limit=trials, technique=technique, seed=seed,
                           quiet=True, run_name="overhead", batch=batch)
    # imports are not framework time per trial: load them before the clock starts
    import ensemble.progress
    import ensemble.storage  # noqa: F401

    technique = make_technique(settings, Trivial().space())
    stats["technique"] = 0.0

    def timed(fn: Any) -> Any:
        def call(*a: Any, **k: Any) -> Any:
            t = time.perf_counter()
            try:
                return fn(*a, **k)
            finally:
                stats["technique"] += time.perf_counter() - t
        return call

    # time spent inside the technique is reported apart from driver + storage time
    for name in ("propose", "observe", "observe_foreign", "credit_name"):
        setattr(technique, name, timed(getattr(technique, name)))
    t0, c0 = time.perf_counter(), time.process_time()
    res = run_app(Trivial(), settings, app_ref="scripts.bench_overhead:Trivial", technique=technique)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    return {"wall": wall, "cpu": cpu, **stats, "evaluations": res.evaluations, "duplicates": res.duplicates,
            "requests": res.trials}


def run_opentuner(trials: int, workdir: str, seed: int) -> dict[str, Any]:
    """One OpenTuner 0.8.8 run in its venv (scripts/_bench_overhead_opentuner.py)."""
    from scripts._peers import run_peer

    db = os.path.join(workdir, f"ot-{time.time_ns()}.db")
    return run_peer("opentuner", os.path.join(ROOT, "scripts", "_bench_overhead_opentuner.py"),
                    ["--test-limit", str(trials), "--database", f"sqlite:///{db}"],
                    timeout=3600)


def per_trial_ms(r: dict[str, Any]) -> float:
    """Framework (everything but the objective) ms per measured trial."""
    return 1000.0 * (r["wall"] - r["objective"]) / max(1, r["measured"])


def cpu_per_trial_ms(r: dict[str, Any]) -> float:
    """Like per_trial_ms with process CPU time instead of wall time (less sensitive to a busy machine)."""
    return 1000.0 * (r["cpu"] - r["objective"]) / max(1, r["measured"])


def driver_ms_per_request(r: dict[str, Any]) -> float:
    """Driver + storage ms per request (technique time excluded; duplicates are requests too)."""
    return 1000.0 * (r["wall"] - r["objective"] - r["technique"]) / max(1, r["requests"])


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--trials", type=int, default=5000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--technique", default="default")
    p.add_argument("--batch", type=int, nargs="+", default=[1],
                   help="our RunSettings.batch values to measure (1: strictly sequential; 4 = OpenTuner's "
                        "default --parallelism)")
    p.add_argument("--stores", nargs="+", choices=("sqlite", "memory"), default=["sqlite", "memory"],
                   help="our results stores to measure (OpenTuner always uses a SQLite file)")
    p.add_argument("--no-opentuner", action="store_true", help="only measure ours")
    p.add_argument("--markdown", action="store_true", help="print a table for docs/BENCHMARKS.md")
    args = p.parse_args(argv)
    variants = [(st, b) for st in args.stores for b in args.batch]
    ours: dict[tuple[str, int], list[float]] = {v: [] for v in variants}
    drv: dict[tuple[str, int], list[float]] = {v: [] for v in variants}
    ours_cpu: dict[tuple[str, int], list[float]] = {v: [] for v in variants}
    theirs: list[float] = []
    theirs_cpu: list[float] = []
    with tempfile.TemporaryDirectory(prefix="bench-overhead-") as workdir:
        for rep in range(args.repeats):
            for v in variants:
                st, b = v
                r = run_ours(args.trials, workdir, args.technique, seed=rep, batch=b, store=st)
                ours[v].append(per_trial_ms(r))
                drv[v].append(driver_ms_per_request(r))
                ours_cpu[v].append(cpu_per_trial_ms(r))
                print(f"repeat {rep}: ensemble-tuner {st} batch {b}: {ours[v][-1]:.3f} ms/trial "
                      f"({r['measured']} measured, {r['duplicates']} duplicates, wall {r['wall']:.2f} s, "
                      f"technique {r['technique']:.2f} s; driver+storage {drv[v][-1]:.3f} ms/request; "
                      f"CPU {ours_cpu[v][-1]:.3f} ms/trial)",
                      flush=True)
            if not args.no_opentuner:
                try:
                    o = run_opentuner(args.trials, workdir, seed=rep)
                except RuntimeError as exc:
                    print(f"OpenTuner unavailable: {exc}", file=sys.stderr)
                    args.no_opentuner = True
                    continue
                theirs.append(per_trial_ms(o))
                theirs_cpu.append(cpu_per_trial_ms(o))
                print(f"repeat {rep}: OpenTuner 0.8.8 {theirs[-1]:.3f} ms/trial "
                      f"({o['measured']} measured, wall {o['wall']:.2f} s; CPU {theirs_cpu[-1]:.3f} ms/trial)",
                      flush=True)
    mt = statistics.median(theirs) if theirs else None
    for (st, b), xs in ours.items():
        mo = statistics.median(xs)
        line = (f"median framework time per trial: ensemble-tuner {st} batch {b}: {mo:.3f} ms "
                f"(driver+storage alone {statistics.median(drv[(st, b)]):.3f} ms/request)")
        if mt is not None:
            line += f"; OpenTuner 0.8.8 {mt:.3f} ms; ratio OpenTuner/ours {mt / mo:.1f}x"
        print(line)
    if args.markdown:
        print(f"\n| tuner | framework ms per measured trial (median of {args.repeats}) | ratio OpenTuner/this "
              "| runs | driver+storage ms per request (technique excluded) | CPU ms per measured trial |")
        print("|---|---|---|---|---|---|")
        for (st, b), xs in ours.items():
            mo = statistics.median(xs)
            ratio = f"{mt / mo:.1f}x" if mt is not None else "-"
            print(f"| ensemble-tuner, {args.technique}, {st}, batch {b} | {mo:.3f} | {ratio} | "
                  f"{', '.join(f'{x:.3f}' for x in xs)} | {statistics.median(drv[(st, b)]):.3f} | "
                  f"{statistics.median(ours_cpu[(st, b)]):.3f} |")
        if theirs:
            print(f"| OpenTuner 0.8.8, default (AUC bandit, --parallelism 4) | {mt:.3f} | 1.0x | "
                  f"{', '.join(f'{x:.3f}' for x in theirs)} | - | {statistics.median(theirs_cpu):.3f} |")
        print(f"\nmachine: {platform.node()} {platform.machine()}, {os.cpu_count()} CPUs, "
              f"load average {os.getloadavg()[0]:.1f} at the end; Python {platform.python_version()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
