"""MPI scaling: trials per second against ranks, central vs per-rank search.

Why: under ``mpirun -n N`` users expect about N times the measurement
throughput.  The objective sleeps (0.2 s by default), so the numbers show the
framework's coordination cost through the shared SQLite database, not the CPU
(the ranks may outnumber the cores: the sleeps overlap).  Both search modes of
``ensemble.mpi`` run side by side in one command: ``central`` (rank 0 searches
for everybody) and ``per-rank`` (every rank searches with its own technique);
for each we also count configurations measured more than once (dedup across
ranks) and compare the measured requests with ``test_limit``.

    python -m scripts.bench_mpi                       # ranks 1,2,4,8; default + IslandGA; both modes
    python -m scripts.bench_mpi --ranks 1,4 --repeats 1 --techniques IslandGA
    python -m scripts.bench_mpi --side 4 --ranks 1,4,8 --repeats 1   # small space: dedup across ranks

Each configuration is one ``mpirun -n N python -m scripts.bench_mpi --child``
with a fresh database; rank 0 times ``ensemble.driver.run_app`` after a barrier
(imports excluded).  Reported: median trials/s over ``--repeats`` and the
ratio to the 1-rank median of the same mode and technique.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import shlex
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
MPIRUN = Path(sys.executable).parent / "mpirun"
#: the credit names of the model-led arms (the GP and, since session 30, its partner in the lead): their
#: share of the measured trials is reported as "model proposed"
MODELS: tuple[str, ...] = ("BayesOpt", "TPE")


def _child(ns: argparse.Namespace) -> None:
    """The MPI program: tune a sleeping objective, rank 0 writes the timing."""
    from ensemble import Integer, SearchSpace, TunerApp
    from ensemble.driver import run_app
    from ensemble.mpi import comm_world, polite_barrier
    from ensemble.settings import RunSettings

    sleep, side, names = ns.sleep, ns.side, "abcd"[: ns.params]

    class Sleeper(TunerApp):
        def space(self) -> SearchSpace:
            return SearchSpace().add(*(Integer(n, 0, side - 1) for n in names))

        def run(self, config: dict, limit: float | None) -> float:
            time.sleep(sleep)
            return float(sum((config[n] - min(7, side - 1)) ** 2 for n in names))

    # Import everything run_app will need before the clock starts (deap, storage,
    # the technique modules): import time is not tuning throughput.
    import ensemble.driver.local
    import ensemble.storage  # noqa: F401
    from ensemble.registry import create_technique

    create_technique(ns.technique, seed=0)
    comm = comm_world()
    settings = RunSettings(technique=ns.technique, database=f"sqlite:///{ns.db}", run_name="bench",
                           test_limit=ns.limit, seed=1, quiet=True)
    polite_barrier(comm)
    profile = None
    if ns.profile and comm.Get_rank() == 0:
        import cProfile

        profile = cProfile.Profile()
        profile.enable()
    t0, cpu0 = time.perf_counter(), time.process_time()
    result = run_app(Sleeper(), settings, app_ref="scripts.bench_mpi:Sleeper")
    elapsed, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    if profile is not None:
        profile.disable()
        profile.dump_stats(ns.profile)
    measured = comm.gather(result.extra.get("measured_here", result.evaluations), root=0)  # 1 rank: no MPI loop
    if comm.Get_rank() == 0:
        con = sqlite3.connect(ns.db)
        twice = con.execute(
            "SELECT COUNT(*) FROM (SELECT configuration_id FROM requests WHERE duplicate = 0 "
            "AND state NOT IN ('WAITING', 'RUNNING') GROUP BY configuration_id HAVING COUNT(*) > 1)"
        ).fetchone()[0]
        unique = con.execute("SELECT COUNT(*) FROM results r JOIN requests q ON q.id = r.request_id "
                             "WHERE q.duplicate = 0").fetchone()[0]
        # who proposed the measured trials: the share the model (BayesOpt) proposed
        by_tech = dict(con.execute("SELECT technique, COUNT(*) FROM requests WHERE duplicate = 0 "
                                   "AND state NOT IN ('WAITING', 'RUNNING') GROUP BY technique").fetchall())
        # when each measured request was claimed and finished, in seconds from the first claim (the
        # store's clock): the loop's steady throughput and the workers' busy share (see _loop_figures)
        spans = con.execute("SELECT (julianday(claimed_at) - j0) * 86400.0, (julianday(finished_at) - j0) * 86400.0, "
                            "(julianday(created_at) - j0) * 86400.0, worker "
                            "FROM requests, (SELECT MIN(julianday(claimed_at)) AS j0 FROM requests WHERE duplicate = 0) "
                            "WHERE duplicate = 0 AND claimed_at IS NOT NULL AND finished_at IS NOT NULL").fetchall()
        con.close()
        Path(ns.out).write_text(json.dumps({
            "elapsed": elapsed, "measured": unique, "per_rank": measured, "measured_twice": twice,
            "evaluations": result.evaluations, "test_limit": ns.limit, "duplicates": result.duplicates,
            "by_technique": by_tech, "best": result.best_value, "rank0_cpu": cpu,
            "spans": [[round(a, 4), round(b, 4)] for a, b, _, _ in spans],
            # how long each request waited to be claimed, and each worker's gap from a finish to its next claim
            "queue_wait": [round(a - c, 4) for a, _, c, _ in spans],
            "worker_gap": _worker_gaps([(w, a, b) for a, b, _, w in spans]),
            # every rank measures with --parallelism drivers in the central mode, with one in the per-rank mode
            "measurers": comm.Get_size() * (max(1, settings.parallelism)
                                            if os.environ.get("ENSEMBLE_MPI_SEARCH", "central") == "central" else 1),
        }))


def _one(n: int, mode: str, technique: str, ns: argparse.Namespace, repeat: int = 0) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-mpi-") as tmp:
        out = Path(tmp) / "out.json"
        env = dict(os.environ, ENSEMBLE_MPI_SEARCH=mode,
                   PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        cmd = [str(ns.mpirun), *shlex.split(ns.mpirun_flags), "-n", str(n), sys.executable, "-m", "scripts.bench_mpi",
               "--child",
               "--db", str(Path(tmp) / "b.db"), "--out", str(out), "--sleep", str(ns.sleep),
               "--limit", str(ns.trials_per_rank * n), "--technique", technique,
               "--side", str(ns.side), "--params", str(ns.params)]
        if ns.profile:  # one file per run; absolute, since the child runs from the repository root
            cmd += ["--profile", str(Path(f"{ns.profile}.{technique}.{mode}.{n}.{repeat}.prof").resolve())]
        proc = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=600, check=False)
        if proc.returncode != 0 or not out.exists():
            raise SystemExit(f"{' '.join(cmd)} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-4000:]}")
        rec: dict[str, Any] = json.loads(out.read_text())
    rec["rate"] = rec["measured"] / rec["elapsed"]
    # rank 0's CPU time (search driver, its measuring thread, the database) per measured trial: at N ranks
    # of a `sleep`-second objective the driver must keep up with one result every sleep / N seconds
    rec["rank0_cpu_ms"] = 1000 * rec.get("rank0_cpu", float("nan")) / max(rec["measured"], 1)
    rec.update(_loop_figures(rec))
    counted = sum(rec["by_technique"].values())
    rec["model_share"] = (sum(rec["by_technique"].get(m, 0) for m in MODELS) / counted if counted
                          else float("nan"))
    return rec


def _worker_gaps(rows: list[tuple[str, float, float]]) -> list[float]:
    """Per worker, in claim order: the seconds from one finish to the next claim (time spent not measuring)."""
    by: dict[str, list[tuple[float, float]]] = {}
    for worker, claimed, finished in rows:
        by.setdefault(str(worker), []).append((claimed, finished))
    gaps = []
    for spans in by.values():
        spans.sort()
        gaps += [round(max(0.0, nxt[0] - prev[1]), 4) for prev, nxt in itertools.pairwise(spans)]
    return gaps


def _loop_figures(rec: dict[str, Any]) -> dict[str, float]:
    """What the whole-run rate mixes together, taken apart from the database's claim and finish stamps.

    * ``steady_rate``: results per second between the 10th and the 90th
      percentile of the finish times: the loop's throughput without the
      start (run creation, the model's first design, ranks joining) and the
      tail (the last trials, the barrier, rank 0's report);
    * ``busy``: the share of the measurers' time inside a trial (claim to
      finish) over that same window of finish times, with every measurer of
      every rank counted: below 1 is time a worker waited for a request or
      for the database;
    * ``outside_s``: the run's wall time minus first claim to last finish.

    Why: at 32 ranks the whole-run rate was 18-19x one rank while rank 0's
    CPU was busy a fifth of the time; these say whether the rest is fixed
    cost at the ends of a short run or waiting inside the loop.
    """
    spans = sorted(rec.get("spans") or [], key=lambda s: s[1])
    if len(spans) < 10:
        return {"steady_rate": float("nan"), "busy": float("nan"), "outside_s": float("nan"),
                "queue_wait_ms": float("nan"), "worker_gap_ms": float("nan")}
    ends = [b for _, b in spans]
    lo, hi = int(0.1 * len(ends)), int(0.9 * len(ends))
    t_lo, t_hi = ends[lo], ends[hi]
    steady = (hi - lo) / (t_hi - t_lo) if t_hi > t_lo else float("nan")
    inside = sum(max(0.0, min(b, t_hi) - max(a, t_lo)) for a, b in spans)
    busy = inside / (rec.get("measurers", 1) * (t_hi - t_lo)) if t_hi > t_lo else float("nan")
    waits, gaps = rec.get("queue_wait") or [float("nan")], rec.get("worker_gap") or [float("nan")]
    return {"steady_rate": steady, "busy": busy, "outside_s": rec["elapsed"] - (ends[-1] - min(a for a, _ in spans)),
            "queue_wait_ms": 1000 * statistics.median(waits), "worker_gap_ms": 1000 * statistics.fmean(gaps)}


def resolve_mpirun(given: str | None) -> str | None:
    """The mpirun to start: ``given`` as a path or as a name on PATH, else the venv's, else PATH's.

    A bare name such as ``mpirun`` (the GPU machine's Open MPI) is looked up
    on PATH, as a shell would; checking it as a path would refuse it.
    """
    if given is None:
        return str(MPIRUN) if MPIRUN.exists() else shutil.which("mpirun")
    if Path(given).exists():
        return str(Path(given).resolve())  # the ranks start from the repository root, not from here
    return shutil.which(given)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ranks", default="1,2,4,8")
    ap.add_argument("--modes", default="central,per-rank")
    ap.add_argument("--techniques", default="default,IslandGA")
    ap.add_argument("--sleep", type=float, default=0.2, help="seconds each trial sleeps")
    ap.add_argument("--trials-per-rank", type=int, default=12)
    ap.add_argument("--side", type=int, default=32,
                    help="values per parameter; 4 (with 4 parameters) gives a 256-point space where ranks collide")
    ap.add_argument("--params", type=int, default=4, choices=(1, 2, 3, 4),
                    help="integer parameters (4; issue 18 uses 2)")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--json", help="also write the raw records here")
    ap.add_argument("--mpirun", default=None, help="the mpirun to start (default: the one next to this Python, "
                    "as the mpich wheel installs it; else the first on PATH)")
    ap.add_argument("--mpirun-flags", default="", help="extra mpirun options, e.g. Open MPI as root on a machine "
                    "with more cores: '--allow-run-as-root --oversubscribe --bind-to none'")
    ap.add_argument("--profile", default=None, metavar="PATH",
                    help="cProfile rank 0 (the search driver, in central mode) of each run into PATH.<ranks>.prof")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--db", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--limit", type=int, help=argparse.SUPPRESS)
    ap.add_argument("--technique", default="default", help=argparse.SUPPRESS)
    ns = ap.parse_args(argv)
    if ns.child:
        _child(ns)
        return 0
    ns.mpirun = resolve_mpirun(ns.mpirun)
    if ns.mpirun is None:
        print(f"no mpirun next to {sys.executable} or on PATH; pip install 'ensemble-tuner[mpi]' or give --mpirun",
              file=sys.stderr)
        return 2
    ranks = [int(x) for x in ns.ranks.split(",")]
    rows: list[dict[str, Any]] = []
    print(f"# bench_mpi  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  {platform.node()}  "
          f"{os.cpu_count()} CPUs  sleep={ns.sleep}s  trials/rank={ns.trials_per_rank}  repeats={ns.repeats}  "
          f"space={ns.side}^{ns.params}")
    if ns.profile:
        print("# --profile: rank 0 runs under cProfile, so its CPU ms and the trials/s are inflated")
    print("| mode | technique | ranks | trials/s (median) | x 1 rank | measured twice | measured / test_limit "
          "| model proposed | rank 0 CPU ms / trial | best | steady trials/s (10-90 %) | steady x 1 rank "
          "| workers busy | s outside the loop | request waits to be claimed, median ms | worker's gap finish to "
          "next claim, mean ms |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for technique in ns.techniques.split(","):
        for mode in ns.modes.split(","):
            base = None
            steady_base = float("nan")
            for n in ranks:
                # interleave repeats across configurations would be fairer; repeats stay adjacent
                recs = [_one(n, mode, technique, ns, k) for k in range(ns.repeats)]
                rate = statistics.median(r["rate"] for r in recs)
                twice = max(r["measured_twice"] for r in recs)
                # measured requests against the budget: the repeat furthest from test_limit
                worst = max(recs, key=lambda r: abs(r["measured"] - r["test_limit"]))
                budget = f"{worst['measured']} / {worst['test_limit']}"
                if n == ranks[0]:
                    base = rate / n if n > 1 else rate
                ratio = rate / base if base else float("nan")
                share = statistics.median(r["model_share"] for r in recs)
                best = statistics.median(r["best"] for r in recs)
                cpu_ms = statistics.median(r["rank0_cpu_ms"] for r in recs)
                steady = statistics.median(r["steady_rate"] for r in recs)
                if n == ranks[0]:
                    steady_base = steady / n if n > 1 else steady
                busy = statistics.median(r["busy"] for r in recs)
                outside = statistics.median(r["outside_s"] for r in recs)
                qwait = statistics.median(r["queue_wait_ms"] for r in recs)
                gap = statistics.median(r["worker_gap_ms"] for r in recs)
                rows.append({"mode": mode, "technique": technique, "ranks": n, "rate": rate,
                             "ratio": ratio, "measured_twice": twice, "model_share": share, "records": recs})
                print(f"| {mode} | {technique} | {n} | {rate:.2f} | {ratio:.2f} | {twice} | {budget} "
                      f"| {share:.0%} | {cpu_ms:.1f} | {best:g} | {steady:.2f} | {steady / steady_base:.2f} "
                      f"| {busy:.0%} | {outside:.1f} | {qwait:.0f} | {gap:.0f} |", flush=True)
    if ns.json:
        Path(ns.json).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
