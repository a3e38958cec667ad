"""Table 3 of Garvey & Abdelrahman (Scientific Programming 2018) on our hardware.

Measure (on an OpenCL device)::

    python -m scripts.bench_garvey measure --size 128 --benchmarks 8 --time-limit 360 --out FILE.json

For each benchmark of a stratified subset of the 104 (``garvey_suite``), one
runner (data on the device once) and one cache of measured configurations
serve every strategy, as the paper's auto-tuner caches compiled
configurations (Sec. 7.2); each strategy is charged the compile and run time
of every configuration it asked for, as if it had measured it alone.
Strategies: the three heuristics with each of the four loading techniques
(the oracles and the predictor's training data, Sec. 7.2 / 8.1), Rand (1000
samples), ExpS, and, with the same budget of unique configurations, the
default ensemble and the AUC bandit.  A configuration the device refuses
(work-group or local memory too large) is counted as asked for but not
compiled, as in the paper.  Timing as the paper: one untimed run, the mean
of three.  The output file is rewritten after every strategy.

Analyse (anywhere)::

    python -m scripts.bench_garvey table FILE.json [--out TABLE.json] [--plot PNG]

Table 3's rows: speedup over Rand (geometric mean), configurations, compile
and run seconds (means over kernels), best count; heuristics with the
random forest use leave-one-out predictions (Sec. 7.2); Table 6's accuracies.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

LOADINGS = ("global", "vec", "local", "image")
HEURISTICS = ("dims", "opts", "hybrid")


# ---- measuring -------------------------------------------------------------------------------------------------
_WORKER: dict[str, Any] = {}


def _worker_init(platform: str, device: str, lock: Any) -> None:
    """A build process: its own OpenCL context on the same device (spawned, never forked)."""
    from measurement.opencl import OpenCLBackend

    _WORKER["be"] = OpenCLBackend(platform, device)
    _WORKER["lock"] = lock


def _timed(runner: Any, built: Any, max_launch: float | None) -> Any:
    """The paper's timing; with ``max_launch``, a kernel slower than that on one launch keeps that time."""
    if max_launch is None or not isinstance(built, tuple):
        return runner.measure(built)
    full = dict(runner.timing)
    runner.timing = {**full, "warmup": 0, "repeats": 1, "discard_first": 0}
    try:
        first = runner.measure(built)
    finally:
        runner.timing = full
    if first.state != "OK" or (first.time or 0.0) > max_launch:
        return first
    return runner.measure(built)


def _record(res: Any, compile_s: float, run_s: float, compiled: bool) -> dict[str, Any]:
    return {"value": res.time if res.state == "OK" and res.time else math.inf,
            "state": res.state, "reason": (res.reason or "")[:120],
            "compile_s": compile_s if compiled else 0.0, "run_s": run_s if compiled else 0.0, "compiled": compiled}


def _worker_measure(bench: str, size: int, runner_kw: dict[str, Any], config: dict[str, Any],
                    max_launch: float | None) -> dict[str, Any]:
    """Build ``config`` in this process, then time it while holding the device lock (one kernel at a time)."""
    from apps.stencil.garvey_suite import garvey_benchmark
    from apps.stencil.runner import OpenCLStencilRunner

    if _WORKER.get("key") != (bench, size):
        _WORKER.pop("runner", None)
        _WORKER["runner"] = OpenCLStencilRunner(garvey_benchmark(bench).stencil(size), _WORKER["be"], **runner_kw)
        _WORKER["key"] = (bench, size)
    r = _WORKER["runner"]
    t0 = time.perf_counter()
    built = r.build(config)
    dt = time.perf_counter() - t0
    if not isinstance(built, tuple):
        compiled = not (built.reason or "").startswith(("refused", "illegal"))
        return _record(built, dt, 0.0, compiled)
    with _WORKER["lock"]:
        t0 = time.perf_counter()
        res = _timed(r, built, max_launch)
        return _record(res, dt, time.perf_counter() - t0, True)


class ProcBuilder:
    """Each configuration built and timed in one of ``procs`` worker processes.

    Why processes: on NVIDIA's OpenCL, builds from several threads of one
    process ran one at a time (a 16-thread run built about 1.7 kernels per
    second), and a binary built elsewhere is PTX that the loading process
    compiles again, serially.  So each worker has its own context on the
    device and its own copy of the data, builds the kernel itself and times
    it while holding a lock shared by all workers: builds overlap, kernels
    never run at the same time.  Compile time is each build's own wall time
    (several run at once on the CPU cores).
    """

    def __init__(self, be: Any, procs: int) -> None:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        mp = multiprocessing.get_context("spawn")
        self.pool = ProcessPoolExecutor(procs, mp_context=mp, initializer=_worker_init,
                                        initargs=(be.platform_name, be.device.name, mp.Lock()))
        t0 = time.perf_counter()
        for f in [self.pool.submit(time.sleep, 0.2) for _ in range(procs)]:
            f.result()
        print(f"build processes: {procs} started in {time.perf_counter() - t0:.1f} s", flush=True)

    def close(self) -> None:
        """Stop at once: a worker may be in a long build nobody waits for any more."""
        procs = list((getattr(self.pool, "_processes", None) or {}).values())
        self.pool.shutdown(wait=False, cancel_futures=True)
        for p in procs:
            if p.is_alive():
                p.terminate()


class Cache:
    """Every configuration of one benchmark measured once: value, compile s, run s, refused."""

    def __init__(self, runner: Any, space: Any, threads: int, max_launch: float | None = None,
                 builder: ProcBuilder | None = None, deadline: float | None = None, bench: str = "",
                 size: int = 0) -> None:
        self.runner, self.space, self.threads = runner, space, threads
        self.bench, self.size = bench, size  # what a worker process needs to make its own runner
        self.max_launch = max_launch
        self.builder = builder
        self.deadline = deadline
        self.rec: dict[str, dict[str, Any]] = {}
        self.inflight: dict[str, Any] = {}  # hash -> Future of a build submitted but not yet recorded
        self._lock = threading.Lock()

    def _record(self, h: str, res: Any, compile_s: float, run_s: float, compiled: bool) -> None:
        self.rec[h] = _record(res, compile_s, run_s, compiled)

    def _measure_procs(self, todo: dict[str, dict[str, Any]]) -> None:
        """Each configuration built and timed by a worker process (``ProcBuilder``).

        Several strategies may call this at once (``--concurrent``): a configuration another strategy
        already submitted is waited for, never built twice.
        """
        from concurrent.futures import wait

        r = self.runner
        kw = {"limits": r.limits, "image_layout": r.image_layout, "sample": r.sample, **r.timing}
        waits: dict[Any, str] = {}
        with self._lock:
            for h, c in todo.items():
                if h in self.rec:
                    continue
                f = self.inflight.get(h)
                if f is None:
                    f = self.builder.pool.submit(_worker_measure, self.bench, self.size, kw, c,  # type: ignore[union-attr]
                                                 self.max_launch)
                    self.inflight[h] = f
                waits[f] = h
        left = None if self.deadline is None else max(0.0, self.deadline - time.perf_counter())
        done, not_done = wait(list(waits), timeout=left)
        with self._lock:
            for f in done:
                self.rec[waits[f]] = f.result()
                self.inflight.pop(waits[f], None)
        if not_done:
            for f in not_done:
                f.cancel()
            print("    deadline: unfinished builds dropped", flush=True)

    def measure(self, configs: list[dict[str, Any]]) -> None:
        todo: dict[str, dict[str, Any]] = {}
        for c in configs:
            h = self.space.config_hash(c)
            if h not in self.rec and h not in todo:
                todo[h] = c
        if not todo:
            return
        if self.builder is not None:
            self._measure_procs(todo)
            return
        built: dict[str, tuple[Any, float]] = {}

        def build(item: tuple[str, dict[str, Any]]) -> tuple[str, Any, float]:
            h, c = item
            t0 = time.perf_counter()
            return h, self.runner.build(c), time.perf_counter() - t0

        with ThreadPoolExecutor(self.threads) as pool:
            for h, b, dt in pool.map(build, todo.items()):
                built[h] = (b, dt)
        for h, (b, dt) in built.items():
            t0 = time.perf_counter()
            res = self._measure(b)
            run_s = time.perf_counter() - t0
            if run_s > 10:
                print(f"    slow measurement ({run_s:.0f} s): {todo[h]}", flush=True)
            refused = bool(res.reason and res.reason.startswith("refused")) and not isinstance(b, tuple)
            self.rec[h] = {"value": res.time if res.state == "OK" and res.time else math.inf,
                           "state": res.state, "reason": (res.reason or "")[:120],
                           "compile_s": 0.0 if refused else dt, "run_s": 0.0 if refused else run_s,
                           "compiled": not refused}


    def _measure(self, b: Any) -> Any:
        return _timed(self.runner, b, self.max_launch)


def run_strategy(technique: Any, cache: Cache, budget: int | None, seed: int) -> dict[str, Any]:
    """Drive one technique to its end (or ``budget`` unique configurations) on the shared cache.

    ``budget`` caps the unique configurations (``--cap`` for the heuristics: ours, the paper ran them
    to their end); ``truncated`` says the cap or the deadline stopped the strategy before it ended.
    """
    from ensemble.technique import Trial

    technique.bind(cache.space, budget=budget, rng=np.random.default_rng(seed))
    seen: dict[str, float] = {}
    best, best_cfg = math.inf, None
    stalls = 0
    cut_by_deadline = False
    while not technique.done and (budget is None or len(seen) < budget) and stalls < 3:
        if cache.deadline is not None and time.perf_counter() > cache.deadline:
            cut_by_deadline = True
            break
        want = 4096 if budget is None else max(1, min(4096, budget - len(seen)))
        props = technique.propose(want)
        if not props:
            stalls += 1
            continue
        cache.measure(props)
        for c in props:
            h = cache.space.config_hash(c)
            if h not in cache.rec:  # dropped at the deadline
                cut_by_deadline = True
                continue
            r = cache.rec[h]
            dup = h in seen
            seen[h] = r["value"]
            if r["value"] < best:
                best, best_cfg = r["value"], c
            technique.observe(Trial(config=c, config_hash=h, value=r["value"],
                                    state="OK" if math.isfinite(r["value"]) else "FAILED",
                                    technique=getattr(technique, "name", "?"), duplicate=dup, evaluation=len(seen)))
    recs = [cache.rec[h] for h in seen]
    return {"best": best, "best_config": best_cfg, "configs": len(seen),
            "truncated": cut_by_deadline or not technique.done, "deadline": cut_by_deadline,
            "compiled": sum(1 for r in recs if r["compiled"]),
            "compile_s": sum(r["compile_s"] for r in recs), "run_s": sum(r["run_s"] for r in recs),
            "ok": sum(1 for r in recs if math.isfinite(r["value"]))}


def measure(args: argparse.Namespace) -> int:
    from apps.stencil.garvey_suite import garvey_hints, garvey_suite, stratified_subset
    from apps.stencil.runner import OpenCLStencilRunner
    from apps.stencil.space import opencl_space
    from ensemble.registry import create_technique
    from measurement.opencl import OpenCLBackend

    t_start = time.perf_counter()
    be = OpenCLBackend(args.platform, args.device)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    done: list[dict[str, Any]] = json.loads(out.read_text()) if out.exists() else []

    save_lock = threading.RLock()  # strategies of a concurrent phase finish in several threads

    def save(partial: dict[str, Any] | None) -> None:
        with save_lock:
            out.write_text(json.dumps(done + ([partial] if partial else []), indent=1, default=str))
    dev = f"{be.device.name} ({be.device.platform.name})"
    print(f"device: {dev}; size {args.size}^3", flush=True)
    if args.names:
        by = {b.name: b for b in garvey_suite()}
        benches = [by[n] for n in args.names.split(",")]
    else:
        benches = stratified_subset(args.benchmarks, seed=args.subset_seed)
    strategies = args.strategies.split(",")
    loadings = args.loadings.split(",")
    builder = ProcBuilder(be, args.build_procs) if args.build_procs > 0 else None
    model_rows = None
    if any(s.endswith("+RF") for s in strategies):
        from techniques.garvey.predictor import read_model_file

        model_rows = read_model_file(args.model)["rows"]
    walls: list[float] = []
    for b in benches:
        elapsed = time.perf_counter() - t_start
        est = max(walls, default=0.0)
        if elapsed + est > args.time_limit:
            print(f"time limit: {elapsed:.0f} s gone, a benchmark took up to {est:.0f} s; stopping before {b.name}",
                  flush=True)
            break
        t0 = time.perf_counter()
        st = b.stencil(args.size)
        space = opencl_space(st)
        hints = garvey_hints(st)
        runner = OpenCLStencilRunner(st, be, limits=False, image_layout="2d", warmup=1, repeats=3,
                                     statistic="mean", sample=args.verify_sample)
        cache = Cache(runner, space, args.threads, args.max_launch, builder=builder,
                      deadline=t_start + args.hard_limit, bench=b.name, size=args.size)
        res: dict[str, Any] = {"benchmark": b.name, "features": b.features(), "size": args.size, "device": dev,
                               "cap": args.cap, "repeats": args.repeats, "strategies": {}}
        def jobs(s: str, b: Any = b, hints: Any = hints) -> list[tuple[str, Any, int | None, dict[str, Any]]]:
            """(result key, technique, budget, extra fields) for strategy name ``s``."""
            if s in HEURISTICS:
                return [(f"{s}:{ld}", create_technique("garvey", seed=args.seed, heuristic=s, loading=ld,
                                                       hints=hints, repeats=args.repeats), args.cap, {})
                        for ld in loadings]
            if s.endswith("+RF") and s[:-3] in HEURISTICS:
                from techniques.garvey.predictor import LoadingPredictor

                h = s[:-3]
                train = [r for r in model_rows or [] if r.get("name") != b.name]  # never the kernel itself
                key = h if any(h in r["times"] for r in train) else "hybrid"
                ld = LoadingPredictor(seed=1).fit(train, key).predict(b.features())
                t = create_technique("garvey", seed=args.seed, heuristic=h, loading=ld, hints=hints,
                                     repeats=args.repeats)
                return [(s, t, args.cap, {"loading": ld, "model_heuristic": key, "model_kernels": len(train)})]
            if s == "Rand":
                return [("Rand", create_technique("GarveyRand", seed=args.seed, samples=args.rand_samples), None, {})]
            if s == "Exhaustive":  # every configuration: the true optimum where the space is small enough
                return [("Exhaustive", create_technique("ExpS", seed=args.seed, rules=False), None, {})]
            if s == "ExpS":
                return [("ExpS", create_technique("ExpS", seed=args.seed), args.cap, {})]
            return [(s, create_technique(s, seed=args.seed), args.budget, {})]

        # phases: Rand alone first when listed first; with --concurrent and worker processes, every later
        # strategy runs at once on the shared cache (kernels are still timed one at a time)
        phases = [[x] for x in strategies]
        if args.concurrent and builder is not None:
            first = [x for x in strategies[:1] if x == "Rand"]
            phases = ([first] if first else []) + [[x for x in strategies if x not in first]]
        for phase in phases:
            if time.perf_counter() - t_start > args.hard_limit:
                print(f"  hard limit: {', '.join(phase)} and later strategies skipped", flush=True)
                res["incomplete"] = True
                break
            ts = time.perf_counter()
            js = [j for x in phase for j in jobs(x)]

            def one(job: tuple[str, Any, int | None, dict[str, Any]], res: dict[str, Any] = res, cache: Cache = cache,
                    ts: float = ts) -> None:
                key, tech, budget, extra = job
                got = {**run_strategy(tech, cache, budget, args.seed), **extra}
                with save_lock:
                    res["strategies"][key] = got
                    save(res)
                print(f"    {key}: {got['configs']} configurations, {time.perf_counter() - ts:.0f} s", flush=True)

            if len(js) == 1:
                one(js[0])
            else:
                with ThreadPoolExecutor(len(js)) as tp:
                    for f in [tp.submit(one, j) for j in js]:
                        f.result()
            if any(v.get("deadline") for v in res["strategies"].values()):
                res["incomplete"] = True
            comp = [r for r in cache.rec.values() if r["compiled"]]
            print(f"  {b.name} {'+'.join(phase)}: {time.perf_counter() - ts:.1f} s, cache {len(cache.rec)} "
                  f"({len(comp)} compiled, {sum(r['compile_s'] for r in comp):.0f} build s)", flush=True)
            res["unique_measured"] = len(cache.rec)
            res["compiled"] = len(comp)
            res["wall_s"] = time.perf_counter() - t0
            save(res)  # partial: a killed run keeps what it measured
        done.append(res)
        save(None)
        walls.append(res.get("wall_s", time.perf_counter() - t0))
        print(f"{b.name}: {len(cache.rec)} configurations in {walls[-1]:.1f} s "
              f"(elapsed {time.perf_counter() - t_start:.0f} s)", flush=True)
    if builder is not None:
        builder.close()
    return 0


def buildtime(args: argparse.Namespace) -> int:
    """Why Rand's builds were slow: build time of Rand's first configurations, one at a time, per variant.

    Each variant of ``--variants`` (``rolled`` / ``compiler``: ``generate_opencl``'s ``large_loops``) builds
    the same configurations in this process, one after the other, with a time budget per variant; then
    the start-up of one spawned build process (context creation) is timed.
    """
    from apps.stencil.garvey_suite import garvey_benchmark
    from apps.stencil.opencl_gen import generate_opencl
    from apps.stencil.space import opencl_space
    from ensemble.registry import create_technique
    from measurement.opencl import OpenCLBackend, OpenCLBuildError

    be = OpenCLBackend(args.platform, args.device)
    st = garvey_benchmark(args.benchmark).stencil(args.size)
    t = create_technique("GarveyRand", seed=args.seed, samples=args.samples)
    t.bind(opencl_space(st), budget=None, rng=np.random.default_rng(args.seed))
    configs = t.propose(args.samples)
    out: dict[str, Any] = {"device": f"{be.device.name} ({be.device.platform.name})", "benchmark": args.benchmark,
                           "size": args.size, "variants": {}}
    for v in args.variants.split(","):
        rows = []
        t_end = time.perf_counter() + args.budget
        for c in configs:
            if time.perf_counter() > t_end:
                break
            k = generate_opencl(st, c, limits=False, image_layout="2d", large_loops=v)
            pts = c["bmx"] * c["bmy"] * c["bmz"] * c["cmx"] * c["cmy"] * c["cmz"]
            t0 = time.perf_counter()
            try:
                be.build(k.source)
                ok = True
            except OpenCLBuildError:
                ok = False
            rows.append({"points": pts, "build_s": time.perf_counter() - t0, "ok": ok, "source_chars": len(k.source)})
            print(f"  {v}: {pts} points per work-item, {rows[-1]['build_s']:.2f} s", flush=True)
            out["variants"][v] = rows
            Path(args.out).write_text(json.dumps(out, indent=1))  # a build cut by a timeout keeps the others
        out["variants"][v] = rows
        bs = [r["build_s"] for r in rows]
        print(f"{v}: {len(bs)} builds, mean {np.mean(bs) if bs else float('nan'):.2f} s, "
              f"max {max(bs, default=float('nan')):.2f} s", flush=True)
        Path(args.out).write_text(json.dumps(out, indent=1))
    t0 = time.perf_counter()
    pb = ProcBuilder(be, 1)
    out["spawn_one_build_process_s"] = time.perf_counter() - t0
    pb.close()
    Path(args.out).write_text(json.dumps(out, indent=1))
    print(f"one build process (spawn, import, context): {out['spawn_one_build_process_s']:.1f} s", flush=True)
    return 0


# ---- analysis --------------------------------------------------------------------------------------------------
def _geomean(xs: list[float]) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return float(math.exp(sum(math.log(x) for x in xs) / len(xs))) if xs else float("nan")


def rows_of(results: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Predictor rows: features and, per heuristic, the best time of each loading."""
    return [{"name": r["benchmark"], "features": r["features"],
             "times": {h: {ld: r["strategies"][f"{h}:{ld}"]["best"] for ld in LOADINGS
                           if f"{h}:{ld}" in r["strategies"]}
                       for h in HEURISTICS if f"{h}:global" in r["strategies"]}} for r in results]


def table(args: argparse.Namespace) -> int:
    from techniques.garvey.predictor import best_loading, leave_one_out

    allres = json.loads(Path(args.results).read_text())
    results = [r for r in allres if "Rand" in r["strategies"] and not r["strategies"]["Rand"].get("deadline")]
    if any(not r.get("incomplete") for r in results):  # a kernel the deadline cut would drop whole rows
        results = [r for r in results if not r.get("incomplete")]
    if len(results) < len(allres):
        print(f"left out (Rand or a later strategy cut by the deadline): {', '.join(r['benchmark'] for r in allres if r not in results)}")
    for r in results:  # a run the deadline cut short is no row of the table
        r["strategies"] = {k: v for k, v in r["strategies"].items() if not v.get("deadline")}
    model_rows = None
    if args.model:
        from techniques.garvey.predictor import read_model_file

        model_rows = read_model_file(args.model)["rows"]
    if not results:
        print("no benchmark with Rand in", args.results)
        return 1
    rows = rows_of(results)
    approaches: dict[str, list[dict[str, Any] | None]] = {}
    loo: dict[str, Any] = {}
    for h in HEURISTICS:
        if not all(h in r["times"] for r in rows):
            continue
        loo[h] = leave_one_out(rows, h) if len(rows) >= 2 else None
    for i, r in enumerate(results):
        s = r["strategies"]
        row: dict[str, dict[str, Any] | None] = {"ExpS": s.get("ExpS"), "Rand": s.get("Rand")}
        for h in HEURISTICS:
            if f"{h}+RF" in s:  # measured directly with the loading a model without this kernel predicted
                row[f"{h} + RF"] = s[f"{h}+RF"]
            runs = {ld: s[f"{h}:{ld}"] for ld in LOADINGS if f"{h}:{ld}" in s}
            if len(runs) < len(LOADINGS):
                continue
            best_ld = best_loading({ld: v["best"] for ld, v in runs.items()}) or "global"
            row[f"Oracle {h}"] = {"best": runs[best_ld]["best"],
                                  **{k: sum(v[k] for v in runs.values()) for k in ("configs", "compiled",
                                                                                   "compile_s", "run_s")}}
            if model_rows is not None and f"{h} + RF" not in row:
                # a model file measured elsewhere (e.g. the dataset run), without this kernel's own row
                from techniques.garvey.predictor import LoadingPredictor

                train = [m for m in model_rows if m.get("name") != r["benchmark"]]
                key = h if any(h in m["times"] for m in train) else "hybrid"
                p = LoadingPredictor(seed=1).fit(train, key).predict(r["features"])
                row[f"{h} + RF"] = {**runs[p], "loading": p}
            elif loo.get(h) and f"{h} + RF" not in row:
                p = loo[h]["predictions"][i]["predicted"]
                row[f"{h} + RF"] = {**runs[p], "loading": p}
            for ld in LOADINGS:
                row[f"{h} {ld}"] = runs[ld]
        for extra in ("default", "AUCBandit", "Exhaustive"):
            if extra in s:
                row[extra] = s[extra]
        for k, v in row.items():
            approaches.setdefault(k, []).append(v)
        for k, vals in approaches.items():
            if k not in row:
                vals.append(None)
    n = len(results)
    main = ["ExpS", "Rand"] + [f"Oracle {h}" for h in HEURISTICS] + [f"{h} + RF" for h in HEURISTICS] + \
        ["default", "AUCBandit", "Exhaustive"]
    complete = [k for k in main if k in approaches and len(approaches[k]) == n
                and all(v is not None for v in approaches[k])]
    out_rows: list[dict[str, Any]] = []
    for k in list(approaches):
        vals = approaches[k]
        if len(vals) != n or any(v is None for v in vals):
            continue
        sp = [results[i]["strategies"]["Rand"]["best"] / v["best"] if v["best"] > 0 else 0.0  # type: ignore[index]
              for i, v in enumerate(vals)]
        bc = None
        if k in complete and k != "Exhaustive":
            # Table 3's best count: the oracles against the baselines and each other; every other approach
            # against the baselines, the heuristics with RF, default and AUCBandit; ties count for each
            pool_names = [a for a in complete if a != "Exhaustive" and (
                (a.startswith("Oracle") == k.startswith("Oracle")) or a in ("ExpS", "Rand"))]
            bc = 0
            for i in range(n):
                low = min(approaches[a][i]["best"] for a in pool_names)  # type: ignore[index]
                bc += vals[i]["best"] <= low * (1 + 1e-9)  # type: ignore[index]
        out_rows.append({"approach": k, "speedup_vs_rand": _geomean(sp),
                         "configs": float(np.mean([v["configs"] for v in vals])),  # type: ignore[index]
                         "compiled": float(np.mean([v["compiled"] for v in vals])),  # type: ignore[index]
                         "compile_s": float(np.mean([v["compile_s"] for v in vals])),  # type: ignore[index]
                         "run_s": float(np.mean([v["run_s"] for v in vals])),  # type: ignore[index]
                         "best_count": bc, "speedups": sp,
                         "loadings": [v.get("loading") for v in vals]})  # type: ignore[union-attr]
    acc = {h: ({k: v for k, v in loo[h].items() if k != "predictions"} if loo.get(h) else None) for h in loo}
    doc = {"kernels": n, "names": [r["benchmark"] for r in results], "device": results[0]["device"],
           "size": results[0]["size"], "rows": out_rows, "predictor_loo": acc,
           "predictions": {h: loo[h]["predictions"] for h in loo if loo[h]}}
    if args.out:
        Path(args.out).write_text(json.dumps(doc, indent=1))
    print(f"{n} kernels on {doc['device']}, {doc['size']}^3")
    print(f"{'approach':<16} {'speedup':>8} {'configs':>8} {'compiled':>9} {'compile s':>10} {'run s':>8} {'best':>5}")
    for r in out_rows:
        print(f"{r['approach']:<16} {r['speedup_vs_rand']:8.2f} {r['configs']:8.0f} {r['compiled']:9.0f} "
              f"{r['compile_s']:10.2f} {r['run_s']:8.2f} {'' if r['best_count'] is None else r['best_count']:>5}")
    for r in out_rows:
        if r["approach"].endswith("+ RF"):
            print(f"{r['approach']}: predicted loadings {r['loadings']}")
    for h, a in acc.items():
        if a:
            print(f"RF {h}: absolute accuracy {a['absolute_accuracy']:.2f}, penalty-weighted "
                  f"{a['penalty_weighted_accuracy']:.2f} (leave-one-out, {a['kernels']} kernels)")
    if args.plot:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        fig, ax = plt.subplots(figsize=(8, 3.5))
        shown = [r for r in out_rows if r["approach"] in main]
        ax.boxplot([r["speedups"] for r in shown])
        ax.set_xticks(range(1, len(shown) + 1), [r["approach"] for r in shown])
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_ylabel("speedup over Rand")
        ax.set_title(f"{doc['device'][:40]}, {n} kernels, {doc['size']}^3")
        plt.setp(ax.get_xticklabels(), rotation=30, ha="right")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
    return 0


#: Table 3 of the paper (speedup over Rand, geometric mean over 104 kernels): GTX Titan, Radeon R9 390
PAPER_TABLE3 = {"ExpS": (1.07, 1.21), "Rand": (1.00, 1.00), "Oracle dims": (1.09, 1.17),
                "Oracle opts": (1.15, 1.32), "Oracle hybrid": (1.14, 1.34), "dims + RF": (1.07, 1.13),
                "opts + RF": (1.14, 1.28), "hybrid + RF": (1.12, 1.32)}


def compare(args: argparse.Namespace) -> int:
    """Bars: speedup over Rand per approach, the paper's two GPUs beside our tables."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    series = [("paper: GTX Titan (104)", {k: v[0] for k, v in PAPER_TABLE3.items()}),
              ("paper: R9 390 (104)", {k: v[1] for k, v in PAPER_TABLE3.items()})]
    for spec in args.tables:
        label, path = spec.split("=", 1)
        doc = json.loads(Path(path).read_text())
        series.append((f"{label} ({doc['kernels']})", {r["approach"]: r["speedup_vs_rand"] for r in doc["rows"]}))
    order = ["Rand", "ExpS", "Oracle dims", "Oracle opts", "Oracle hybrid", "dims + RF", "opts + RF", "hybrid + RF",
             "default", "AUCBandit"]
    order = [a for a in order if any(a in d for _, d in series)]
    fig, ax = plt.subplots(figsize=(10, 3.8))
    w = 0.8 / len(series)
    for j, (label, d) in enumerate(series):
        xs = [i + (j - (len(series) - 1) / 2) * w for i, a in enumerate(order) if a in d]
        ax.bar(xs, [d[a] for a in order if a in d], w, label=label)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xticks(range(len(order)), order)
    plt.setp(ax.get_xticklabels(), rotation=25, ha="right")
    ax.set_ylabel("speedup over Rand (geo. mean)")
    ax.legend(fontsize=8, ncol=2)
    fig.tight_layout()
    fig.savefig(args.out, dpi=110)
    print(f"wrote {args.out}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure")
    m.add_argument("--platform")
    m.add_argument("--device")
    m.add_argument("--size", type=int, default=128)
    m.add_argument("--benchmarks", type=int, default=8, help="stratified subset size (of 104)")
    m.add_argument("--names", help="comma-separated benchmark names instead of a subset")
    m.add_argument("--subset-seed", type=int, default=0)
    m.add_argument("--strategies", default="hybrid,dims,opts,Rand,ExpS,default,AUCBandit")
    m.add_argument("--repeats", type=int, default=2, help="the heuristics' n (paper: 2)")
    m.add_argument("--loadings", default=",".join(LOADINGS), help="loadings the heuristics run with (all four: "
                   "the oracles and the predictor's labels)")
    m.add_argument("--cap", type=int, default=None,
                   help="at most this many unique configurations per heuristic run (ours; the paper has no cap)")
    m.add_argument("--model", help="loading-model file for the '<heuristic>+RF' strategies (default: the shipped "
                   "one); the benchmark's own row is left out before fitting")
    m.add_argument("--build-procs", type=int, default=0,
                   help="build kernels in this many worker processes (0: --threads threads in this process)")
    m.add_argument("--concurrent", action="store_true",
                   help="with --build-procs: run every strategy after Rand at once on the shared cache (fills "
                   "the build processes; kernels are still timed one at a time)")
    m.add_argument("--rand-samples", type=int, default=1000)
    m.add_argument("--budget", type=int, default=300, help="unique configurations for default / AUCBandit")
    m.add_argument("--threads", type=int, default=8, help="parallel kernel builds")
    m.add_argument("--verify-sample", type=int, default=2000)
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--max-launch", type=float, default=None,
                   help="a kernel slower than this (s) on its first launch is not repeated (ours, not the paper's)")
    m.add_argument("--time-limit", type=float, default=1e9, help="start no new benchmark unless it fits in this many s (judged by the longest benchmark so far)")
    m.add_argument("--hard-limit", type=float, default=1e9, help="start no new strategy, and drop unfinished builds, after this many s")
    m.add_argument("--out", required=True, help="JSON file (a list, one entry per benchmark; appended to)")
    t = sub.add_parser("table")
    t.add_argument("results", help="the JSON file 'measure' wrote")
    t.add_argument("--out", help="write the table as JSON here")
    t.add_argument("--plot")
    t.add_argument("--model", help="loading-model file for the '+ RF' rows (the kernel's own row left out); "
                   "default: leave-one-out over the kernels of RESULTS")
    bt = sub.add_parser("buildtime", help="build time of Rand's configurations per loop variant (one at a time)")
    bt.add_argument("--platform")
    bt.add_argument("--device")
    bt.add_argument("--benchmark", default="box1d_r5_z")
    bt.add_argument("--size", type=int, default=64)
    bt.add_argument("--samples", type=int, default=12)
    bt.add_argument("--seed", type=int, default=0)
    bt.add_argument("--variants", default="rolled,compiler")
    bt.add_argument("--budget", type=float, default=30.0, help="seconds of builds per variant")
    bt.add_argument("--out", required=True)
    c = sub.add_parser("compare", help="bar plot: our tables beside the paper's Table 3")
    c.add_argument("tables", nargs="+", help="LABEL=TABLE.json (written by 'table --out')")
    c.add_argument("--out", required=True)
    a = ap.parse_args(argv)
    return {"measure": measure, "table": table, "compare": compare, "buildtime": buildtime}[a.cmd](a)


if __name__ == "__main__":
    sys.exit(main())
