"""OpenTuner apps, unchanged, on ensemble-tuner and on OpenTuner 0.8.8: best value and wall time.

Why this comparison: the compatibility layer promises that an OpenTuner app
runs here with no change and finds a configuration at least as good as
OpenTuner itself does on the same budget. The apps are the fixtures in
tests/compat/apps/ (written in the style of OpenTuner's own examples); each
runs, with the same flags and budget, as ``ensemble-tuner opentuner APP.py
FLAGS --seed S`` and as ``python APP.py FLAGS`` in OpenTuner 0.8.8's venv
(scripts/_peers.py makes it under .bench/) with Python's and NumPy's global
generators seeded with S (OpenTuner has no seed flag). Each run gets a fresh
working directory and database; the best value is read from that run's own
database afterwards (OpenTuner's ``result`` table, our ``results``), the wall
time is the whole process, start-up included.

    python -m scripts.bench_opentuner_compat                 # 10 seeds, every app
    python -m scripts.bench_opentuner_compat --seeds 2 --apps rosenbrock tsp --out /tmp/x.json
    python -m scripts.bench_opentuner_compat --apps tsp --technique default GA --out /tmp/v.json

``--technique NAME...`` is for finding out why a row differs: ours only,
once per NAME, with ``--technique NAME`` added to the app's flags (rows
``app --technique NAME``); OpenTuner is not run.

Writes the per-run numbers as JSON (--out) and prints the Markdown table
that docs/OPENTUNER.md carries. docs/opentuner_compat_bench.json holds
several such files merged by hand: ``apps`` (runs of the table, from the
commands docs/OPENTUNER.md names) and ``diagnosis`` (``--technique`` runs).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from scripts._peers import peer_python

ROOT = Path(__file__).resolve().parent.parent
APPS = ROOT / "tests" / "compat" / "apps"

#: seeds Python's and NumPy's global generators before running an app under OpenTuner
_OT_LAUNCHER = ("import random, runpy, sys\nimport numpy\ns = int(sys.argv[1])\nrandom.seed(s)\n"
                "numpy.random.seed(s)\nsys.argv = sys.argv[2:]\nsys.path.insert(0, sys.argv[0].rsplit('/', 1)[0])\n"
                "runpy.run_path(sys.argv[0], run_name='__main__')\n")


@dataclass(frozen=True)
class Case:
    """One app with its flags; ``databases`` are the SQLite files (in the run's directory) to read."""

    name: str
    app: str
    args: tuple[str, ...]
    databases: tuple[str, ...] = ("run.db",)
    maximize: str | None = None        # a metric to maximise instead of minimising time
    peer: bool = True                  # False: OpenTuner 0.8.8 lacks what the app uses
    note: str = ""


CASES = [
    Case("rosenbrock", "rosenbrock.py", ("--test-limit", "100")),
    Case("tsp", "tsp.py", ("cities10.txt", "--test-limit", "100")),
    Case("custom_technique", "custom_technique.py", ("--technique", "CoordinateStep", "--test-limit", "60")),
    Case("api_example", "api_example.py", (), note="60 asks"),
    Case("multiple_tuning_runs", "multiple_tuning_runs.py", (), databases=("a.db", "b.db", "c.db"),
         note="40 asks x 3 runs; value = sum of the 3 bests"),
    Case("custom_metric", "custom_metric_example.py", ("--test-limit", "8"), maximize="qps", peer=False,
         note="MaximizeAttribute is newer than 0.8.8"),
    Case("mmm_tuner", "mmm_tuner.py", ("--test-limit", "10"), note="measured seconds"),
    Case("gccflags_minimal", "gccflags_minimal.py", ("--test-limit", "12"), note="measured seconds"),
    Case("gccflags", "gccflags.py", ("kernel.cpp", "--test-limit", "12"), note="measured seconds"),
]


@dataclass
class Run:
    tuner: str
    seed: int
    ok: bool
    best: float | None
    measured: int
    wall_s: float
    error: str = ""
    extra: dict[str, Any] = field(default_factory=dict)


def _workdir() -> Path:
    work = Path(tempfile.mkdtemp(prefix="otcompat-"))
    for f in (APPS / "programs").iterdir():
        shutil.copy(f, work / f.name)
    shutil.copy(APPS / "cities10.txt", work / "cities10.txt")
    return work


def _with_database(case: Case, args: list[str]) -> list[str]:
    return args if case.databases != ("run.db",) else [*args, "--database", "sqlite:///run.db"]


def _best_opentuner(path: Path, case: Case) -> tuple[float | None, int]:
    con = sqlite3.connect(path)
    try:
        best, n = con.execute("SELECT min(time), count(*) FROM result WHERE state = 'OK'").fetchone()
    finally:
        con.close()
    return best, int(n)


def _best_ours(path: Path, case: Case) -> tuple[float | None, int]:
    from ensemble.storage import Storage

    storage = Storage(f"sqlite:///{path}")
    try:
        (run,) = storage.list_runs()
        rows = [r for r in storage.trials(run.id) if not r.duplicate and r.state == "OK"]
    finally:
        storage.close()
    if case.maximize:
        return max((r.metrics[case.maximize] for r in rows), default=None), len(rows)
    return min((r.metrics.get("time", r.value) for r in rows), default=None), len(rows)


def run_case(case: Case, tuner: str, seed: int, timeout: float, technique: str | None = None) -> Run:
    work = _workdir()
    args = _with_database(case, list(case.args)) + (["--technique", technique] if technique else [])
    if tuner == "ours":
        cmd = [sys.executable, "-m", "ensemble.cli", "opentuner", str(APPS / case.app), *args,
               "--seed", str(seed), "--quiet"]
    else:
        cmd = [str(peer_python("opentuner")), "-c", _OT_LAUNCHER, str(seed), str(APPS / case.app), *args]
    t0 = time.perf_counter()
    try:
        proc = subprocess.run(cmd, cwd=work, capture_output=True, text=True, timeout=timeout,
                              env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin", "HOME": str(work)}, check=False)
        wall = time.perf_counter() - t0
        if proc.returncode != 0:
            return Run(tuner, seed, False, None, 0, wall, proc.stderr.strip().splitlines()[-1:][0][:300]
                       if proc.stderr.strip() else f"exit {proc.returncode}")
        read = _best_ours if tuner == "ours" else _best_opentuner
        bests, measured = [], 0
        for db in case.databases:
            best, n = read(work / db, case)
            bests.append(best)
            measured += n
        best_total = None if any(b is None for b in bests) else float(sum(bests))  # type: ignore[arg-type]
        return Run(tuner, seed, True, best_total, measured, wall)
    except subprocess.TimeoutExpired:
        return Run(tuner, seed, False, None, 0, time.perf_counter() - t0, f"timeout after {timeout} s")
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _summary(runs: list[Run]) -> dict[str, Any]:
    values = [r.best for r in runs if r.ok and r.best is not None]
    walls = [r.wall_s for r in runs if r.ok]
    return {
        "ok": sum(r.ok for r in runs), "n": len(runs),
        "best_median": statistics.median(values) if values else None,
        "best_min": min(values) if values else None, "best_max": max(values) if values else None,
        "wall_median_s": statistics.median(walls) if walls else None,
        "measured_median": statistics.median([r.measured for r in runs if r.ok]) if walls else None,
        "errors": sorted({r.error for r in runs if not r.ok}),
    }


def _fmt(v: float | None) -> str:
    return "-" if v is None else f"{v:.4g}"


def table(results: dict[str, Any]) -> str:
    lines = [("| app | budget | ours: median best [min, max] | OpenTuner 0.8.8: median best [min, max] | "
             "ours: median wall s | OpenTuner: median wall s | measured (ours / OT) | note |"),
             "|---|---|---|---|---|---|---|---|"]
    for name, res in results.items():
        o, p = res["ours"], res.get("opentuner")
        better = res.get("direction", "min")
        ours = f"{_fmt(o['best_median'])} [{_fmt(o['best_min'])}, {_fmt(o['best_max'])}] ({o['ok']}/{o['n']} ok)"
        if p is None:
            peer, pwall, pmeas = "not run", "-", "-"
        else:
            peer = f"{_fmt(p['best_median'])} [{_fmt(p['best_min'])}, {_fmt(p['best_max'])}] ({p['ok']}/{p['n']} ok)"
            pwall, pmeas = _fmt(p["wall_median_s"]), _fmt(p["measured_median"])
        lines.append(f"| {name} | {res['budget']} | {ours} | {peer} | {_fmt(o['wall_median_s'])} | {pwall} | "
                     f"{_fmt(o['measured_median'])} / {pmeas} | {res['note']}{' (max)' if better == 'max' else ''} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seeds", type=int, default=10, help="seeds per app and tuner (default 10)")
    parser.add_argument("--apps", nargs="*", default=[c.name for c in CASES], help="case names (default all)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds one run may take")
    parser.add_argument("--out", default=None,
                        help="JSON file (default docs/opentuner_compat_bench.json; with --technique: none)")
    parser.add_argument("--technique", nargs="+", metavar="NAME",
                        help="ours only, once per technique NAME given to the app as --technique NAME")
    ns = parser.parse_args(argv)
    results: dict[str, Any] = {}
    if ns.technique:
        return _variants(ns, results)
    ns.out = ns.out or str(ROOT / "docs" / "opentuner_compat_bench.json")
    for case in CASES:
        if case.name not in ns.apps:
            continue
        runs: dict[str, list[Run]] = {"ours": [], "opentuner": []}
        for seed in range(ns.seeds):
            for tuner in ("ours", "opentuner") if case.peer else ("ours",):
                run = run_case(case, tuner, seed, ns.timeout)
                runs[tuner].append(run)
                print(f"{case.name:22s} {tuner:9s} seed {seed}: best {_fmt(run.best)} measured {run.measured} "
                      f"wall {run.wall_s:.1f} s {run.error}", flush=True)
        results[case.name] = {
            "budget": " ".join(case.args) or case.note, "note": case.note,
            "direction": "max" if case.maximize else "min",
            "ours": _summary(runs["ours"]), "opentuner": _summary(runs["opentuner"]) if case.peer else None,
            "runs": {k: [vars(r) for r in v] for k, v in runs.items()},
        }
        Path(ns.out).write_text(json.dumps(results, indent=1, sort_keys=True))
    print(table(results))
    return 0


def _variants(ns: argparse.Namespace, results: dict[str, Any]) -> int:
    """Ours only, with ``--technique NAME`` for each NAME: which technique makes a row's difference."""
    for case in CASES:
        if case.name not in ns.apps:
            continue
        for technique in ns.technique:
            runs = []
            for seed in range(ns.seeds):
                run = run_case(case, "ours", seed, ns.timeout, technique)
                runs.append(run)
                print(f"{case.name:22s} --technique {technique:22s} seed {seed}: best {_fmt(run.best)} "
                      f"measured {run.measured} wall {run.wall_s:.1f} s {run.error}", flush=True)
            results[f"{case.name} --technique {technique}"] = {
                "budget": " ".join(case.args) or case.note, "note": case.note,
                "direction": "max" if case.maximize else "min", "ours": _summary(runs), "opentuner": None,
                "runs": {"ours": [vars(r) for r in runs]},
            }
            if ns.out:
                Path(ns.out).write_text(json.dumps(results, indent=1, sort_keys=True))
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
