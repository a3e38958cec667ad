"""csTuner's comparison (Sun et al., CLUSTER 2021, Section V, Figs. 8-9) on our GPU, start to finish.

Run on the GPU machine (``. scripts/gpu_env.sh`` first):

    python -m scripts.bench_cstuner_gpu --stencils j3d7pt,helmholtz --budget 48 --reps 2 --out $OUT

For each repetition, stencil of Table III and tuner, one tuning run of
``--budget`` unique evaluations through ``ensemble.tune`` (kernels compiled
in parallel by ``--parallelism`` threads, measured one at a time), each in
its own SQLite database.  The traces are read back from the database: every
non-duplicate result in the order it finished, with its wall time since the
run was created (compile time included).  Tuners:

* ``CsTuner``: csTuner in one process (two sub-populations on a local ring);
* ``CsTuner-mpi2``: the same under ``mpirun -n 2`` (central mode: rank 0
  searches with one sub-population per rank, both ranks measure, each with
  ``--parallelism / 2`` compile threads; on a one-GPU machine both ranks
  share the GPU, so their measurements take turns through a device lock);
* ``CsTuner-mpi2-2gpu``: the paper's setting (Section V: two ranks, each
  with its own V100): the same two ranks, each on its own GPU of the two
  the run sees (``CUDA_VISIBLE_DEVICES``, e.g. ``--gpus 4 --gpus-per-worker
  2``; the engine binds rank r to GPU r, ``ensemble.mpi.rank_device``), no
  device lock, each with ``--parallelism`` compile threads; not in the
  default list (it needs two GPUs per run);
* ``cstuner-ensemble``: the design-card preset (AUC bandit over NelderMead,
  SimulatedAnnealing and csTuner's grouped island GA);
* ``default``: the project's default technique;
* ``opentuner-arms``: our AUC bandit over OpenTuner's classic arms
  (DifferentialEvolution, GreedyMutation, NormalGreedyMutation, NelderMead):
  our implementations of those arms, labelled as such, not OpenTuner's code
  (for that, see the next tuner);
* ``opentuner-0.8.8``: OpenTuner 0.8.8 itself, its default search
  (AUCBanditMetaTechniqueA: an AUC bandit over DifferentialEvolutionAlt,
  UniformGreedyMutation, NormalGreedyMutation and RandomNelderMead, with
  ``--parallelism`` set to ours), driving the same kernels: OpenTuner runs in
  a subprocess (its SQLAlchemy 1.3 cannot share our process) and the
  technique ``scripts/_opentuner_proxy.py`` relays its desired results to
  the run's search driver.  Measurement is identical to the other tuners'
  (the same app and grids, the same ``--parallelism`` compile threads, the
  same database and trace), so the iso-time curves include OpenTuner's own
  overhead (its search and its database, and the proposals the space's
  constraints reject: OpenTuner cannot express them, so each is answered to
  it as an error at once, never measured and not counted, at most 100 x
  ``--budget`` a run; each record's ``opentuner`` says how many).  Like
  every tuner it gets the baseline configuration where the space holds it
  (the CUDA spaces do), as its ``--seed-configuration``: on csTuner's CUDA
  space, where about 5 configurations in a million meet the constraints,
  OpenTuner's random starts are all rejected and its mutation arms find
  valid neighbours of the best it knows.  Not in the default list (so the default
  command and its records stay as they were): name it with ``--tuners``.  It
  needs an OpenTuner 0.8.8 interpreter: on the GPU machine ``. scripts/gpu_env.sh``
  installs the wheels of ``.whl/opentuner/`` (made by
  ``scripts/fetch_opentuner_wheels.sh``) and sets ``OPENTUNER_PYTHON``;
  locally ``.bench/opentuner-venv`` is made on first use.

Outputs under ``--out``: ``runs.jsonl`` (one line per run, written as it
ends, so a cut run keeps what finished), ``summary.md`` (the table),
``iso_iteration.png`` and ``iso_time.png`` (best kernel time against
evaluations and against wall time, mean over repetitions).  ``--backend
opencl --size 24`` runs the same pipeline on PoCL for a local check.

``--first-rep R`` numbers the repetitions (and seeds)
from R, so a later call adds repetitions instead of repeating seeds.

``--gpus N`` (a machine with N GPUs) runs N copies of the comparison at
once, one per GPU: the stencils are dealt round-robin (list them so that
each GPU gets a mix of slow and fast ones), worker k sees only GPU k
(``CUDA_VISIBLE_DEVICES``) and the k-th of N equal slices of the CPUs (so
each run compiles on as many cores as on a one-GPU machine with 16 cores
when the machine has 16 per GPU), and every run still has its GPU to
itself; ``CsTuner-mpi2``'s two ranks share their worker's GPU, as on a
one-GPU machine.  The workers' records are merged into ``runs.jsonl`` and
each record says which GPU and how many CPUs it had.  A worker that has
finished its own stencils goes on with the others' runs not yet started
(each run is claimed once through a file created exclusively under
``--out``), so the GPUs stay busy until the last runs instead of waiting for
the worker dealt the slowest stencils; every run is still recorded once.
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

import numpy as np

TUNERS = ("CsTuner", "cstuner-ensemble", "default", "opentuner-arms", "CsTuner-mpi2")
#: OpenTuner 0.8.8 itself, through scripts/_opentuner_proxy.py
OPENTUNER = "opentuner-0.8.8"
#: tuners run only when named (CsTuner-mpi2-2gpu needs two GPUs per run; opentuner-0.8.8 an OpenTuner interpreter)
EXTRA_TUNERS = ("CsTuner-mpi2-2gpu", OPENTUNER)
MPI_TUNERS = ("CsTuner-mpi2", "CsTuner-mpi2-2gpu")
OPENTUNER_ARMS = ("DifferentialEvolution", "GreedyMutation", "NormalGreedyMutation", "NelderMead")
#: the paper's iso-time result on V100 x 2 (Section V-B, Fig. 10): csTuner's speedup over each method
PAPER = {"OpenTuner": 1.3, "Artemis": 1.2, "Garvey": 1.7}


def _register() -> None:
    from ensemble.registry import register, technique_names

    if "opentuner-arms" not in technique_names():
        register("opentuner-arms", "AUCBandit", arms=list(OPENTUNER_ARMS))
    if OPENTUNER not in technique_names():
        register(OPENTUNER, "scripts._opentuner_proxy:OpenTunerProxy")


_APPS: dict[str, Any] = {}


def _app(args: argparse.Namespace, stencil: str) -> Any:
    """One app per stencil for the whole comparison: its grids are made and uploaded once."""
    from apps.stencil.app import StencilApp

    if stencil not in _APPS:
        ns = argparse.Namespace(stencil=stencil, size=args.size, backend=args.backend, repeats=args.repeats,
                                warmup=1, discard_first=0, statistic="median", verify_sample=100_000,
                                metrics="none", device=None, device_lock=getattr(args, "device_lock", None))
        _APPS[stencil] = StencilApp(ns)
    return _APPS[stencil]


def warm_up(args: argparse.Namespace, stencil: str) -> float:
    """Make the grids, upload them and measure the baseline once, outside every timed run."""
    from apps.stencil.cuda_gen import cuda_baseline
    from apps.stencil.opencl_gen import opencl_baseline

    t = time.time()
    app = _app(args, stencil)
    base = cuda_baseline() if args.backend == "cuda" else opencl_baseline()
    if app.space().is_valid(base):
        app.run_compiled(base, app.compile(base), None)
    return time.time() - t


def ncu_demo(args: argparse.Namespace, stencil: str, k: int, out: Path) -> None:
    """``--metrics ncu`` on ``k`` random configurations: csTuner's metric set per trial."""
    from apps.stencil.cuda_metrics import nsight_metrics

    app = _app(args, stencil)
    rows = []
    for cfg in app.space().sample(np.random.default_rng(0), k):
        t = time.time()
        rows.append({"config": cfg, "metrics": nsight_metrics(app.args, dict(cfg)), "seconds": time.time() - t})
        (out / "ncu_demo.json").write_text(json.dumps(rows, indent=1, default=str))
        print(f"ncu {stencil}: {len(rows[-1]['metrics'])} metrics in {rows[-1]['seconds']:.1f} s", flush=True)


def _lock_wait(db: str) -> float:
    """Seconds the run's measurements waited for the device lock (0 without one)."""
    con = sqlite3.connect(db)
    try:
        rows = con.execute("SELECT metrics_json FROM results").fetchall()
    except sqlite3.Error:
        return 0.0
    finally:
        con.close()
    return float(sum(json.loads(m or "{}").get("device_lock_wait_s", 0.0) for (m,) in rows))


def _technique_state(db: str) -> dict[str, Any] | None:
    """The technique's stored state (run_state "technique"): for opentuner-0.8.8 its version and counts."""
    con = sqlite3.connect(db)
    try:
        row = con.execute("SELECT data_json FROM run_state WHERE key = 'technique' ORDER BY run_id LIMIT 1").fetchone()
    except sqlite3.Error:
        return None
    finally:
        con.close()
    return json.loads(row[0]) if row else None


def _trace(db: str) -> list[tuple[float, float]]:
    """(seconds since the run was created, value) of each measured result, in finishing order."""
    con = sqlite3.connect(db)
    try:
        created = con.execute("SELECT created_at FROM runs ORDER BY id LIMIT 1").fetchone()[0]
        rows = con.execute(
            "SELECT q.finished_at, r.value, r.state FROM results r JOIN requests q ON q.id = r.request_id "
            "WHERE q.duplicate = 0 AND q.finished_at IS NOT NULL ORDER BY q.finished_at").fetchall()
    finally:
        con.close()
    t0 = datetime.fromisoformat(str(created))
    out = []
    for fin, value, state in rows:
        v = float(value) if value is not None and str(state) == "OK" else float("inf")
        out.append(((datetime.fromisoformat(str(fin)) - t0).total_seconds(), v))
    return out


def one_run(args: argparse.Namespace, stencil: str, tuner: str, rep: int, tmp: str) -> dict[str, Any]:
    """One tuning run; returns its record (trace, best, wall seconds)."""
    db = os.path.join(tmp, f"{stencil}-{tuner}-{rep}.db")
    t = time.time()
    err = None
    if tuner in MPI_TUNERS:
        own_gpu = tuner == "CsTuner-mpi2-2gpu"
        cmd = [args.mpirun, "-n", "2", *args.mpirun_flags.split(), sys.executable, "-m",
               "scripts.bench_cstuner_gpu", "--one-run", stencil, "--db", db, "--seed", str(rep),
               "--budget", str(args.budget), "--backend", args.backend, "--parallelism",
               str(args.parallelism if own_gpu else max(1, args.parallelism // 2)), "--repeats", str(args.repeats)]
        if args.size:
            cmd += ["--size", str(args.size)]
        if own_gpu:  # one GPU per rank: nothing shared, no lock
            cmd += ["--rank-gpus"]
        else:  # the two ranks share the one GPU: their measurements take turns (compiles overlap)
            cmd += ["--device-lock", getattr(args, "device_lock", None) or os.path.join(tmp, "device.lock")]
        try:
            proc = subprocess.run(cmd, capture_output=True, text=True, timeout=args.run_timeout, check=False,
                                  env=dict(os.environ, ENSEMBLE_MPI_SEARCH="central"))
        except (OSError, subprocess.TimeoutExpired) as exc:  # no mpirun, or a hung run: record, go on
            err = f"{type(exc).__name__}: {exc}"
        else:
            if proc.returncode != 0:
                err = (proc.stdout[-800:] + proc.stderr[-800:]).strip()
    else:
        try:
            _tune(args, stencil, tuner, db, rep)
        except Exception as exc:  # noqa: BLE001 - one failed run must not stop the comparison
            err = f"{type(exc).__name__}: {exc}"
    wall = time.time() - t
    trace = _trace(db) if os.path.exists(db) else []
    finite = [v for _, v in trace if np.isfinite(v)]
    rec = {"stencil": stencil, "tuner": tuner, "rep": rep, "budget": args.budget, "wall_s": wall,
           "evaluations": len(trace), "best_s": min(finite) if finite else None, "trace": trace,
           "error": err, "parallelism": args.parallelism,
           "lock_wait_s": _lock_wait(db) if os.path.exists(db) else 0.0,
           "cuda_visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"), "cpus": _cpu_count()}
    if tuner == OPENTUNER and os.path.exists(db):
        # OpenTuner's version and technique, its proposals measured / rejected by the constraints / seed results given
        rec["opentuner"] = _technique_state(db)
    return rec


def _cpu_count() -> int:
    """CPUs this process may run on (its affinity, which ``--gpus`` narrows per worker)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _tune(args: argparse.Namespace, stencil: str, tuner: str, db: str, seed: int) -> Any:
    from ensemble.tune import tune

    _register()
    technique = "CsTuner" if tuner in MPI_TUNERS else tuner
    extra: dict[str, Any] = {}
    if tuner == OPENTUNER:
        # OpenTuner requests the baseline first (its --seed-configuration; the driver measures it as the
        # run's seed for every tuner and answers OpenTuner's request as a duplicate); an answer of its
        # process slower than --run-timeout kills it
        extra["technique_options"] = {"seeds": _app(args, stencil).seed_configurations(),
                                      "reply_timeout": args.run_timeout}
    try:
        return tune(_app(args, stencil), test_limit=args.budget, parallelism=args.parallelism,
                    database=f"sqlite:///{db}", run_name=f"{stencil}-{tuner}-{seed}", seed=seed,
                    technique=technique, quiet=True, **extra)
    finally:
        if tuner == OPENTUNER:
            from scripts._opentuner_proxy import close_all

            close_all()   # its OpenTuner process ends with the run


def _main_via_app(args: argparse.Namespace) -> int:
    """``--one-run STENCIL``: the MPI program of ``CsTuner-mpi2`` (every rank runs this).

    Each rank makes its grids and measures the baseline (``warm_up``) before
    the run is created, as the one-process runs do before theirs, and uses the
    same app settings (sampled verification of 100,000 points): until
    2026-11-26 it went through the command line, which verifies the whole
    grid (about 3 s a trial at 512^3) and made the grids inside the timed run.
    """
    from ensemble.mpi import comm_world, polite_barrier

    comm = comm_world()
    tuner = "CsTuner-mpi2"
    if args.rank_gpus:  # the engine binds rank r of a host to GPU r (ensemble.mpi.rank_device); check there are two
        check_rank_gpus(os.environ.get("CUDA_VISIBLE_DEVICES"), comm.Get_size())
        tuner = "CsTuner-mpi2-2gpu"
    warm_up(args, args.one_run)
    polite_barrier(comm)    # the run's clock starts when every rank can measure
    _tune(args, args.one_run, tuner, args.db, args.seed)
    return 0


def check_rank_gpus(visible: str | None, size: int) -> None:
    """Refuse a one-GPU-per-rank run that would share a GPU.

    The ranks are spread over the host's GPUs by the engine itself (each
    backend opens ``local_rank % devices``, ``ensemble.mpi.rank_device``), as
    a user's ``mpirun`` run is; this only checks that the run sees a GPU per
    rank when ``CUDA_VISIBLE_DEVICES`` narrows it, with the fix in the message.
    """
    if visible is None:
        return
    devices = [d.strip() for d in visible.split(",") if d.strip()]
    if len(devices) < size:
        raise SystemExit(f"CsTuner-mpi2-2gpu: {size} ranks need {size} GPUs, CUDA_VISIBLE_DEVICES={visible!r} "
                         f"names {len(devices)}; run it with --gpus-per-worker {size} (or widen CUDA_VISIBLE_DEVICES)")


# -- summary -----------------------------------------------------------------------

def _best_curve(trace: list[tuple[float, float]], budget: int) -> np.ndarray:
    best, out = np.inf, np.full(budget, np.nan)
    for k, (_, v) in enumerate(trace[:budget]):
        best = min(best, v)
        out[k] = best
    return out


def _best_at(trace: list[tuple[float, float]], t: float) -> float:
    vals = [v for s, v in trace if s <= t]
    return min(vals) if vals else np.inf


def summarize(runs: list[dict[str, Any]], out: Path) -> str:
    """Table + iso-iteration / iso-time plots from the run records.

    A repetition recorded twice (the same stencil, tuner and seed from two
    calls) counts once, the first record kept, so merged files cannot weigh
    one seed double; the number dropped is stated under the table.  The last
    rows give each tuner's geometric mean over the stencils of its ratio to
    CsTuner, after the whole budget and at iso-time.
    """
    seen: set[tuple[str, str, int]] = set()
    unique = []
    for r in runs:
        key = (r["stencil"], r["tuner"], r["rep"])
        if key not in seen:
            seen.add(key)
            unique.append(r)
    dropped, runs = len(runs) - len(unique), unique
    stencils = sorted({r["stencil"] for r in runs})
    tuners = [t for t in TUNERS + EXTRA_TUNERS if any(r["tuner"] == t for r in runs)]
    header = ("| stencil | tuner | reps | mean evals | mean wall s | mean best ms (final) | this / CsTuner (final) | "
              "mean best ms at iso-time | this / CsTuner at iso-time |")
    lines = [header, "|---|---|---|---|---|---|---|---|---|"]
    ratios: dict[str, list[tuple[float, float]]] = {t: [] for t in tuners}
    for st in stencils:
        rs = [r for r in runs if r["stencil"] == st and r["trace"]]
        if not rs:
            continue
        # iso-time: the shortest wall time any run of this stencil took (every run had that long),
        # but no earlier than every run's first result
        t_iso = max(min(r["trace"][-1][0] for r in rs), max(r["trace"][0][0] for r in rs))
        iso = {t: [_best_at(r["trace"], t_iso) for r in rs if r["tuner"] == t] for t in tuners}
        mean_iso = {t: float(np.mean(v)) if v and np.all(np.isfinite(v)) else np.inf for t, v in iso.items()}
        mean_final = {t: float(np.mean([r["best_s"] for r in rs if r["tuner"] == t and r["best_s"] is not None]
                                       or [np.nan])) for t in tuners}
        for t in tuners:
            tr = [r for r in rs if r["tuner"] == t]
            if not tr:
                continue
            finals = [r["best_s"] for r in tr if r["best_s"] is not None]
            sp = mean_iso[t] / mean_iso.get("CsTuner", np.inf) if np.isfinite(mean_iso[t]) else np.nan
            fr = mean_final[t] / mean_final.get("CsTuner", np.nan)
            if np.isfinite(sp) and np.isfinite(fr):
                ratios[t].append((fr, sp))
            lines.append(
                f"| {st} | {t} | {len(tr)} | {np.mean([r['evaluations'] for r in tr]):.0f} | "
                f"{np.mean([r['wall_s'] for r in tr]):.0f} | "
                f"{1e3 * np.mean(finals):.4f} | {fr:.2f}x | {1e3 * mean_iso[t]:.4f} (t={t_iso:.0f} s) | "
                f"{sp:.2f}x |" if finals else f"| {st} | {t} | {len(tr)} | - | - | - | - | - | - |")
    for t in tuners:
        if ratios[t]:
            fin, iso_r = np.array(ratios[t]).T
            lines.append(f"| geometric mean ({len(fin)} stencils) | {t} | | | | | "
                         f"{float(np.exp(np.mean(np.log(fin)))):.2f}x | | {float(np.exp(np.mean(np.log(iso_r)))):.2f}x |")
    if dropped:
        lines.append(f"\n({dropped} record(s) of a repetition already recorded were dropped.)")
    table = "\n".join(lines)
    try:
        _plots(runs, stencils, tuners, out)
    except Exception as exc:  # noqa: BLE001 - the table matters more than the pictures
        table += f"\n\n(plots failed: {type(exc).__name__}: {exc})"
    return table


def _plots(runs: list[dict[str, Any]], stencils: list[str], tuners: list[str], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for kind in ("iteration", "time"):
        fig, axes = plt.subplots(1, len(stencils), figsize=(5 * len(stencils), 3.8), squeeze=False)
        for ax, st in zip(axes[0], stencils):
            for t in tuners:
                tr = [r for r in runs if r["stencil"] == st and r["tuner"] == t and r["trace"]]
                if not tr:
                    continue
                if kind == "iteration":
                    budget = max(r["budget"] for r in tr)
                    curves = np.array([_best_curve(r["trace"], budget) for r in tr])
                    with np.errstate(all="ignore"):
                        y = np.nanmean(np.where(np.isfinite(curves), curves, np.nan), axis=0)
                    ax.plot(np.arange(1, budget + 1), 1e3 * y, label=t)
                else:
                    t_end = max(r["trace"][-1][0] for r in tr)
                    # from the moment every repetition has a result: before it the mean is over the
                    # repetitions that started fastest only, and drew spikes at the first second
                    start = max(r["trace"][0][0] for r in tr)
                    grid = np.linspace(start, max(t_end, start), 200)
                    ys = np.array([[_best_at(r["trace"], g) for g in grid] for r in tr])
                    ax.plot(grid, 1e3 * ys.mean(axis=0), label=t)
            ax.set_title(st)
            ax.set_xlabel("evaluations" if kind == "iteration" else "wall time (s, compile included)")
            ax.set_ylabel("best kernel time (ms)")
            ax.set_yscale("log")
        axes[0][0].legend(fontsize=7)
        fig.tight_layout()
        fig.savefig(out / f"iso_{kind}.png", dpi=110)
        plt.close(fig)


def _jobs(args: argparse.Namespace) -> list[tuple[str, str, int]]:
    """(stencil, tuner, rep) in the order they run: stencil by stencil.

    With ``--missing-from RUNS.jsonl`` only the repetitions that file does not
    hold as a complete run (no error, the whole budget) are run, so a later
    call fills the gaps of earlier ones instead of repeating seeds.
    """
    tuners = [t for t in args.tuners.split(",") if t]
    done = _complete_runs(getattr(args, "missing_from", None), getattr(args, "budget", 0))
    out = []
    for st in args.stencils.split(","):
        for rep in range(args.first_rep, args.first_rep + args.reps):
            # rotate the order so no tuner always runs first on a freshly warmed GPU
            k = rep % len(tuners)
            out += [(st, t, rep) for t in tuners[k:] + tuners[:k] if (st, t, rep) not in done]
    return out


def _claim(claims: str | None, stencil: str, tuner: str, rep: int) -> bool:
    """Whether this worker may run (stencil, tuner, rep): True for the one that creates its claim file first.

    Without ``claims`` (one worker) every run is this worker's.  The claim is
    taken before the run starts and never released: a run cut by the
    deadline or an error is not run again by another worker in this call (a
    later call's ``--missing-from`` fills it).
    """
    if not claims:
        return True
    try:
        fd = os.open(os.path.join(claims, f"{stencil}__{tuner}__{rep}"), os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    os.close(fd)
    return True


def _claimed(claims: str | None, stencil: str, tuner: str, rep: int) -> bool:
    """Whether some worker has claimed (stencil, tuner, rep) already (never, without ``claims``)."""
    return bool(claims) and os.path.exists(os.path.join(str(claims), f"{stencil}__{tuner}__{rep}"))


def _complete_runs(path: str | None, budget: int) -> set[tuple[str, str, int]]:
    """(stencil, tuner, rep) of the complete runs recorded in ``path`` (none without a path)."""
    if not path:
        return set()
    if not os.path.exists(path):
        raise SystemExit(f"--missing-from {path}: no such file; give the runs.jsonl whose gaps to fill")
    out = set()
    for line in Path(path).read_text().splitlines():
        if line.strip():
            r = json.loads(line)
            if not r.get("error") and r.get("evaluations") == budget:
                out.add((r["stencil"], r["tuner"], int(r["rep"])))
    return out


def _worker_plan(stencils: list[str], gpus: int, cpus: list[int], visible: str | None,
                 per_worker: int = 1) -> list[tuple[list[str], str, list[int]]]:
    """(stencils, CUDA_VISIBLE_DEVICES value, CPU ids) for each of ``gpus / per_worker`` workers.

    Stencils are dealt round-robin; a worker left without one is not started.
    ``visible`` is the caller's own ``CUDA_VISIBLE_DEVICES``: worker k gets its
    k-th group of ``per_worker`` entries, so a machine already narrowed to
    some GPUs stays narrowed; the CPUs are split evenly among the workers.
    """
    if per_worker < 1 or gpus % per_worker:
        raise SystemExit(f"--gpus {gpus} --gpus-per-worker {per_worker}: give a divisor of --gpus")
    devices = [d for d in visible.split(",") if d.strip()] if visible else [str(k) for k in range(gpus)]
    if len(devices) < gpus:
        raise SystemExit(f"--gpus {gpus}: CUDA_VISIBLE_DEVICES={visible!r} names only {len(devices)} GPU(s); "
                         f"ask for at most {len(devices)} or widen CUDA_VISIBLE_DEVICES")
    workers = gpus // per_worker
    if len(cpus) < workers:
        raise SystemExit(f"--gpus {gpus}: only {len(cpus)} CPU(s) available; ask for at most {len(cpus)}")
    slices = np.array_split(np.asarray(sorted(cpus)), workers)
    plan = []
    for k in range(workers):
        mine = stencils[k::workers]
        if mine:
            plan.append((mine, ",".join(devices[k * per_worker:(k + 1) * per_worker]), [int(c) for c in slices[k]]))
    return plan


def _worker_argv(args: argparse.Namespace, stencils: list[str], out: Path, first: bool,
                 claims: Path | None = None) -> list[str]:
    """The command line of one ``--gpus`` worker: this call's settings, its stencils, its own --out.

    ``stencils`` lists the worker's own stencils first, then the others' (the
    runs it may take over once its own are claimed, through ``claims``).
    """
    argv = [sys.executable, "-m", "scripts.bench_cstuner_gpu", "--stencils", ",".join(stencils),
            "--tuners", args.tuners, "--budget", str(args.budget), "--reps", str(args.reps),
            "--first-rep", str(args.first_rep), "--backend", args.backend, "--parallelism", str(args.parallelism),
            "--repeats", str(args.repeats), "--run-timeout", str(args.run_timeout), "--mpirun", args.mpirun,
            f"--mpirun-flags={args.mpirun_flags}", "--out", str(out)]
    if args.size:
        argv += ["--size", str(args.size)]
    if args.deadline:
        argv += ["--deadline", str(args.deadline)]
    if args.device_lock:
        argv += ["--device-lock", f"{args.device_lock}.{out.name}"]
    if args.missing_from:
        argv += ["--missing-from", os.path.abspath(args.missing_from)]
    if first and args.ncu_demo:
        argv += ["--ncu-demo", str(args.ncu_demo)]
    if claims is not None:
        argv += ["--claims", str(claims)]
    return argv


def _run_workers(args: argparse.Namespace, out: Path) -> list[dict[str, Any]]:
    """``--gpus N``: one worker process per GPU; returns their records, merged into ``runs.jsonl``."""
    import shutil
    import threading

    try:
        cpus = sorted(os.sched_getaffinity(0))
    except AttributeError:
        cpus = list(range(os.cpu_count() or 1))
    every = [s for s in args.stencils.split(",") if s]
    plan = _worker_plan(every, args.gpus, cpus, os.environ.get("CUDA_VISIBLE_DEVICES"), args.gpus_per_worker)
    # a claim lives for one call; outside --out, so that a call cut short leaves one file per worker there,
    # not one per run (a device call returns a limited number of files: session 20 lost a call's records so)
    claims = Path(tempfile.mkdtemp(prefix="bench_cstuner_claims_"))
    procs = []
    for k, (stencils, device, mine) in enumerate(plan):
        wout = out / f"gpu{k}"
        wout.mkdir(parents=True, exist_ok=True)
        env = dict(os.environ, CUDA_VISIBLE_DEVICES=device, PYTHONUNBUFFERED="1")
        print(f"worker {k}: GPU {device}, CPUs {mine[0]}-{mine[-1]} ({len(mine)}), stencils {','.join(stencils)}",
              flush=True)
        order = stencils + [s for s in every if s not in stencils]   # its own first, then the others'
        proc = subprocess.Popen(_worker_argv(args, order, wout, k == 0, claims), env=env, text=True,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        if hasattr(os, "sched_setaffinity"):  # at once, before the worker's imports end: every nvcc inherits it
            os.sched_setaffinity(proc.pid, mine)
        procs.append((k, wout, proc))

    def relay(k: int, proc: subprocess.Popen) -> None:
        assert proc.stdout is not None
        for line in proc.stdout:
            print(f"[gpu{k}] {line}", end="", flush=True)

    threads = [threading.Thread(target=relay, args=(k, p), daemon=True) for k, _, p in procs]
    for t in threads:
        t.start()
    for _, _, p in procs:
        p.wait()
    for t in threads:
        t.join(timeout=5)
    runs: list[dict[str, Any]] = []
    for k, wout, p in procs:
        log = wout / "runs.jsonl"
        done = [json.loads(x) for x in log.read_text().splitlines() if x.strip()] if log.exists() else []
        for rec in done:
            _write_record(out, rec)
        runs += done
        if p.returncode != 0:
            print(f"worker {k} exited with {p.returncode}; its {len(done)} finished run(s) are kept", flush=True)
        for extra in wout.iterdir():  # the ncu demo's files, if any, move up beside the records
            if extra.name not in ("runs.jsonl", "summary.md", "iso_iteration.png", "iso_time.png"):
                shutil.move(str(extra), str(out / extra.name))
        shutil.rmtree(wout, ignore_errors=True)   # merged: the copy would only take a file slot
    shutil.rmtree(claims, ignore_errors=True)
    return runs


def _report(rec: dict[str, Any]) -> None:
    best = f"{1e3 * rec['best_s']:.4f} ms" if rec["best_s"] else "-"
    print(f"{rec['stencil']} {rec['tuner']} rep {rec['rep']}: {rec['evaluations']} evals, best {best}, "
          f"{rec['wall_s']:.0f} s (lock wait {rec.get('lock_wait_s', 0.0):.1f} s)"
          f"{' ERROR ' + rec['error'][:300] if rec['error'] else ''}", flush=True)


def _write_record(out: Path, rec: dict[str, Any]) -> None:
    """Append one record to runs.jsonl as the run ends, so a cut call keeps what finished."""
    with open(out / "runs.jsonl", "a") as log:
        log.write(json.dumps(rec) + "\n")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stencils", default="j3d7pt,helmholtz")
    ap.add_argument("--tuners", default=",".join(TUNERS))
    ap.add_argument("--budget", type=int, default=48, help="unique evaluations per run")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--first-rep", type=int, default=0, help="number repetitions (and their seeds) from here")
    ap.add_argument("--size", type=int, default=None, help="grid edge (default: the paper's, Table III)")
    ap.add_argument("--backend", choices=("cuda", "opencl"), default="cuda")
    ap.add_argument("--parallelism", type=int, default=os.cpu_count() or 2, help="kernels compiled at once, per run")
    ap.add_argument("--device-lock", default=None, help="lock file for the measurements (default: none for "
                    "one-process runs, one in a temporary directory for the two ranks of CsTuner-mpi2)")
    ap.add_argument("--repeats", type=int, default=5, help="timed launches per configuration")
    ap.add_argument("--deadline", type=float, default=None, help="start no run after this many seconds")
    ap.add_argument("--run-timeout", type=float, default=600.0)
    ap.add_argument("--mpirun", default="mpirun")
    ap.add_argument("--mpirun-flags", default="", help="e.g. '--allow-run-as-root --oversubscribe' (Open MPI)")
    ap.add_argument("--out", default=".")
    ap.add_argument("--ncu-demo", type=int, default=0, metavar="K",
                    help="also run --metrics ncu on K random configurations of the first stencil")
    ap.add_argument("--missing-from", default=None, metavar="RUNS_JSONL", help="run only the repetitions "
                    "(--first-rep .. --first-rep + --reps - 1) this file does not hold as complete runs")
    ap.add_argument("--gpus", type=int, default=1, help="run the stencils on this many GPUs at once, one "
                    "worker per GPU with its share of the CPUs (see the module docstring)")
    ap.add_argument("--gpus-per-worker", type=int, default=1, help="GPUs each --gpus worker sees (2 for "
                    "CsTuner-mpi2-2gpu, one GPU per rank)")
    ap.add_argument("--summarize", default=None, help="only rebuild summary and plots from this runs.jsonl")
    ap.add_argument("--one-run", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--db", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--seed", type=int, default=0, help=argparse.SUPPRESS)
    ap.add_argument("--rank-gpus", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--claims", default=None, help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.one_run:
        return _main_via_app(args)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if args.gpus < 1:
        ap.error(f"--gpus must be at least 1, got {args.gpus}")
    unknown = [t for t in args.tuners.split(",") if t and t not in TUNERS + EXTRA_TUNERS]
    if unknown and not args.summarize:
        ap.error(f"--tuners: unknown {', '.join(unknown)}; choose from {', '.join(TUNERS + EXTRA_TUNERS)}")
    if args.summarize:
        runs = [json.loads(x) for x in Path(args.summarize).read_text().splitlines() if x.strip()]
    elif args.gpus > 1:
        runs = _run_workers(args, out)
    else:
        start = time.time()
        log = out / "runs.jsonl"
        seen = log.stat().st_size if log.exists() else 0
        stencil = None
        late: list[str] = []
        with tempfile.TemporaryDirectory() as tmp:
            for st, t, rep in _jobs(args):
                if args.deadline and time.time() - start > args.deadline:
                    if not _claimed(args.claims, st, t, rep):
                        late.append(f"{st} {t} rep {rep}")
                    continue
                if not _claim(args.claims, st, t, rep):  # another --gpus worker has it
                    continue
                if st != stencil and t not in MPI_TUNERS:  # the MPI ranks make their own grids
                    print(f"warm-up {st}: {warm_up(args, st):.1f} s", flush=True)
                    stencil = st
                rec = one_run(args, st, t, rep, tmp)
                _write_record(out, rec)
                _report(rec)
        if late:  # with --claims, those no worker had started when this one reached the deadline
            print(f"deadline reached: {len(late)} run(s) not started: {', '.join(late[:12])}"
                  f"{' ...' if len(late) > 12 else ''}", flush=True)
        with open(log) as f:  # this call's records only
            f.seek(seen)
            runs = [json.loads(x) for x in f.read().splitlines() if x.strip()]
        if args.ncu_demo:
            try:
                ncu_demo(args, args.stencils.split(",")[0], args.ncu_demo, out)
            except Exception as exc:  # noqa: BLE001 - report, keep the comparison
                print(f"ncu demo failed: {type(exc).__name__}: {exc}", flush=True)
    table = summarize(runs, out)
    paper = ", ".join(f"{v}x over {k}" for k, v in PAPER.items())
    (out / "summary.md").write_text(f"{table}\n\nPaper (V100 x 2, iso-time, Fig. 10): csTuner {paper}.\n")
    print(table, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
