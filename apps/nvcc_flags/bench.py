"""Tune every bundled CUDA program with a small budget and report the gain over ``nvcc -O3``.

Used by ``scripts/gpu_nvcc_bench.sh`` on the GPU machine (``--objective
runtime``) and runnable anywhere nvcc is (``--objective compile``).  After
tuning, the best configuration and the plain -O3 build are rebuilt and run
alternately ``--confirm`` times each, so the reported ratio compares medians
measured side by side, not the tuner's best (lucky) sample against an
earlier baseline.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from typing import Any

from apps.nvcc_flags.app import NvccFlagsApp
from apps.nvcc_flags.programs import PROGRAMS

__all__ = ["bench_program", "main"]


def _confirm(app: NvccFlagsApp, best: dict[str, Any], rounds: int) -> tuple[list[float], list[float]]:
    ev = app.evaluator
    base_build, best_build = ev.compile_flags([]), ev.compile(best)
    base_t: list[float] = []
    best_t: list[float] = []
    for _ in range(rounds):  # alternate, so drift in clocks or load hits both alike
        b = ev.run(base_build, keep=True)
        t = ev.run(best_build, keep=True)
        if b.ok and b.time is not None:
            base_t.append(b.time)
        if t.ok and t.time is not None:
            best_t.append(t.time)
    ev.discard(base_build)
    ev.discard(best_build)
    return base_t, best_t


def bench_program(name: str, *, objective: str, test_limit: int, stop_after: float | None, database: str,
                  seed: int, confirm: int, size: int | None, technique: str) -> dict[str, Any]:
    from ensemble.driver.local import run_app
    from ensemble.settings import RunSettings

    app = NvccFlagsApp(program=name, objective=objective, size=size)
    t0 = time.monotonic()
    settings = RunSettings(test_limit=test_limit, stop_after=stop_after, database=database, seed=seed,
                           quiet=True, technique=technique, run_name=f"nvcc-{objective}-{name}-{int(time.time())}")
    result = run_app(app, settings)
    tune_s = time.monotonic() - t0
    if result.best_config is None or result.best_value is None:
        raise RuntimeError(f"{name}: no successful evaluation in the budget")
    row: dict[str, Any] = {"program": name, "objective": objective, "evaluations": result.evaluations,
                           "tune_s": round(tune_s, 1), "best_flags": app.render(result.best_config)}
    if objective == "compile":
        base = app.evaluator.baseline()
        row.update(baseline=base.time, best=result.best_value,
                   ratio=(base.time / result.best_value) if base.time and result.best_value else None,
                   baseline_metrics=base.metrics)
    else:
        base_t, best_t = _confirm(app, result.best_config, confirm)
        row.update(baseline_times=base_t, best_times=best_t)
        if base_t and best_t:
            row.update(baseline=statistics.median(base_t), best=statistics.median(best_t),
                       ratio=statistics.median(base_t) / statistics.median(best_t))
    app.evaluator.close()
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--objective", choices=["runtime", "compile"], default="runtime")
    p.add_argument("--programs", nargs="*", default=list(PROGRAMS), help="default: all bundled programs")
    p.add_argument("--test-limit", type=int, default=8, help="unique evaluations per program")
    p.add_argument("--stop-after", type=float, default=None, help="seconds of tuning per program")
    p.add_argument("--confirm", type=int, default=3, help="side-by-side reruns of best and -O3 (runtime)")
    p.add_argument("--size", type=int, default=None, help="problem size override (tests)")
    p.add_argument("--technique", default="default")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--database", default="sqlite:///nvcc_bench.db")
    p.add_argument("--json", default=None, help="write all rows to this file")
    ns = p.parse_args(argv)
    rows = []
    label = "speedup over -O3" if ns.objective == "runtime" else "cost ratio -O3/best"
    print(f"{'program':27s} {'evals':>5s} {'-O3':>12s} {'best':>12s} {label}")
    for name in ns.programs:
        try:
            row = bench_program(name, objective=ns.objective, test_limit=ns.test_limit, stop_after=ns.stop_after,
                                database=ns.database, seed=ns.seed, confirm=ns.confirm, size=ns.size,
                                technique=ns.technique)
        except Exception as exc:  # noqa: BLE001 - one broken program must not hide the others
            row = {"program": name, "error": f"{type(exc).__name__}: {exc}"}
            print(f"{name:27s} ERROR {row['error']}", flush=True)
            rows.append(row)
            continue
        rows.append(row)
        if "ratio" in row:
            print(f"{name:27s} {row['evaluations']:5d} {row['baseline']:12.6g} {row['best']:12.6g} "
                  f"{row['ratio']:.3f}x   flags: {' '.join(row['best_flags']) or '(none)'}", flush=True)
        else:
            print(f"{name:27s} no successful confirmation runs", flush=True)
    if ns.json:
        with open(ns.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0 if all("ratio" in r for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
