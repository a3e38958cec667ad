"""GPU stencil benchmark: untuned baseline vs tuned best, against the copy bandwidth and the roofline.

Run on the GPU machine (``. scripts/gpu_env.sh`` first):

    python -m scripts.bench_stencil_gpu --part cuda --budget 40 --out $OUT
    python -m scripts.bench_stencil_gpu --part opencl --budget 24 --out $OUT
    python -m scripts.bench_stencil_gpu --part timers --out $OUT

For each stencil: the baseline (one point per thread, 32x4x1 blocks, global
memory) and the best configuration the tuner (``ensemble.tune``, default
ensemble, kernels compiled in parallel and measured one at a time) finds in
``--budget`` unique evaluations, each re-measured with ``--repeats`` launches.
Reported: GB/s of compulsory traffic (each input read once, each output
written once), that as a fraction of the device-to-device copy bandwidth
measured in the same process, the roofline time max(bytes / copy bandwidth,
flops / peak) and each kernel's fraction of it (roofline time / kernel time),
and ptxas registers and spills.  FP64 (FP32) peak = SMs x clock x 128 (256)
flops per cycle, the sm_90 rate (NVIDIA H100 whitepaper, Table 2).
``--part timers`` compares CUDA-event and OpenCL-event times with a wall
clock around launch + synchronize for the same configuration.

Reliability (issue 17): ``--searches N`` runs N searches per stencil (seeds
``--seed`` .. ``--seed + N - 1``) at the same budget and reports the median,
worst and best fraction of the roofline over them, beside the baseline's, one
record per stencil in ``cuda_roofline.json`` (keys ``stencil``, ``searches``,
``median_pct_roofline``, ``worst_pct_roofline``, ``best_pct_roofline``,
``baseline_pct_roofline``, ``device``, ``copy_bandwidth_gbs``, ...).
``--plot RECORDS.json`` draws fraction-of-roofline per stencil (baseline,
tuned median, tuned best, worst as an error bar) from such a file, no GPU needed:

    python -m scripts.bench_stencil_gpu --part cuda --budget 300 --searches 5 --out $OUT
    python -m scripts.bench_stencil_gpu --plot $OUT/cuda_roofline.json
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import tempfile
import time
from typing import Any

import numpy as np

SYNTHETIC = [("star", 3, 1), ("star", 3, 2), ("star", 3, 4), ("box", 3, 1), ("box", 3, 2), ("diamond", 3, 2),
             ("diamond", 3, 3), ("nocorners", 3, 1), ("nocorners", 3, 2), ("thumbtack", 3, 2), ("thumbtack", 3, 4),
             ("star", 2, 3), ("box", 2, 2), ("star", 1, 4)]


def _peaks(be: Any) -> dict[str, float]:
    if hasattr(be, "peaks"):  # a stand-in backend (tests) states its own
        return dict(be.peaks())
    import pycuda.driver as drv

    d = be.device
    sms = d.get_attribute(drv.device_attribute.MULTIPROCESSOR_COUNT)
    clk = d.get_attribute(drv.device_attribute.CLOCK_RATE) * 1e3  # kHz -> Hz
    major, _ = d.compute_capability()
    fp64_per_clk = 128 if major >= 8 and d.name().startswith(("NVIDIA H", "NVIDIA A100")) else 4
    return {"sms": sms, "clock_hz": clk, "fp64_peak": sms * clk * fp64_per_clk, "fp32_peak": sms * clk * 256}


def _cuda_seeds(st: Any, merge: bool = False, more: bool = False, opt_in: Any = ()) -> list[dict[str, Any]]:
    """The configurations every CUDA search measures first: the baseline, then one or more per family of the space.

    ``more`` (``--more-seeds``): 8 more streaming and blocking shapes, the ones worth trying first.

    ``merge`` (``--merge-seed``; off by default): also the baseline with 2 x 2 points per thread along y and z
    (``bmy=2, bmz=2``), a seed for the one family of the space (thread coarsening) that has none. Screened in
    session 25 after the re-timing study (docs/STENCILS.md) found j3d7pt's fastest H100 kernels in that family,
    under a rule written before the run: on four H200s, j3d27pt's median rose (78.4 against 76.8) but j3d7pt's
    fell (87.3 against 89.6), so it is not a default.

    ``opt_in`` (``--opt-in``): the parameters the space holds beyond the default ones; every seed carries them
    at their defaults, or the space refuses the seeds.
    """
    from apps.stencil.cuda_gen import cuda_baseline, cuda_is_legal

    b = cuda_baseline(opt_in or ())
    cands = [b,
             {**b, "sd": "z", "sb": 8, "bx": 64, "by": 4},
             {**b, "sd": "z", "sb": 16, "bx": 32, "by": 8, "prefetch": True},
             {**b, "sd": "z", "sb": 8, "bx": 64, "by": 4, "smem": True},
             {**b, "bx": 64, "by": 2, "bz": 2, "coef": "constant"},
             {**b, "sd": "z", "sb": 16, "bx": 32, "by": 4, "minb": 2},
             {**b, "bx": 32, "by": 4, "bz": 2, "minb": 2}]
    n_out = len(st.outputs)
    if n_out > 1:  # issue 17: one kernel per output (fission) and a register cap, streamed and not
        cands += [{**b, "fis": n_out},
                  {**b, "fis": n_out, "sd": "z", "sb": 8, "bx": 64, "by": 4},
                  {**b, "sd": "z", "sb": 8, "bx": 64, "by": 4, "maxrreg": 128},
                  {**b, "fis": n_out, "sd": "z", "sb": 8, "bx": 32, "by": 4, "smem": True, "ring": True}]
    cands.append({**b, "sd": "z", "sb": 16, "bx": 64, "by": 4, "smem": True, "ring": True})
    if merge:
        cands.append({**b, "bmy": 2, "bmz": 2})
    if more:
        cands += [{**b, "sd": "z", "sb": sb, "bx": bx, "by": by, "prefetch": pf, "coef": "literal"}
                  for sb, bx, by, pf in ((16, 32, 8, False), (32, 64, 8, True), (16, 128, 4, False),
                                         (32, 256, 2, True), (8, 32, 16, False), (64, 64, 4, True))]
        cands += [{**b, "bx": 128, "by": 2, "bz": 2}, {**b, "bx": 64, "by": 4, "bz": 4}]
    return [c for c in cands if cuda_is_legal(st, c)]


def _opencl_seeds(st: Any) -> list[dict[str, Any]]:
    from apps.stencil.opencl_gen import opencl_baseline, opencl_is_legal

    b = opencl_baseline()
    cands = [b, {**b, "wgx": 64, "wgy": 4, "bmy": 2}, {**b, "wgx": 32, "wgy": 8, "bmx": 4, "vx": 4},
             {**b, "wgx": 32, "wgy": 4, "mem": "local", "bmz": 4}]
    return [c for c in cands if opencl_is_legal(st, c)]


TECHNIQUES = ["default", "GA"]


def _tune(app: Any, seeds: list[dict[str, Any]], budget: int, parallelism: int, name: str, tmp: str,
          seed: int, where: dict[str, str] | None = None,
          techniques: list[str] | None = None, require: list[str] | None = None,
          technique_options: dict[str, Any] | None = None) -> tuple[dict[str, Any] | None, str]:
    """Best configuration after ``budget`` unique evaluations.

    Tries ``ensemble.tune`` with each of ``techniques`` (default TECHNIQUES) in turn (a technique that
    does not load is skipped), then falls back to seeded random sampling.
    ``where``, when given, receives the database and run name of the search
    that answered (for ``_top_configs``); it stays empty after the fallback.
    ``require``: ``--require`` expressions, for the search and the fallback alike.
    ``technique_options``: ``--technique-option`` pairs, given to every technique tried (for example
    ``{"partner": None}``: the default ensemble's GP leading alone, as before session 30).
    """
    from ensemble.errors import ConfigurationError
    from ensemble.tune import tune

    how = ""
    for tech in techniques or TECHNIQUES:
        try:
            res = tune(app, test_limit=budget, parallelism=parallelism, database=f"sqlite:///{tmp}/{name}-{tech}.db",
                       run_name=f"{name}-{tech}", seed=seed, seed_configurations=seeds, technique=tech, quiet=True,
                       require=list(require or []), technique_options=dict(technique_options or {}))
            if res.best_config is not None:
                if where is not None:
                    where.update(database=f"sqlite:///{tmp}/{name}-{tech}.db", run=f"{name}-{tech}")
                opts = f", options={technique_options!r}" if technique_options else ""
                return dict(res.best_config), f"ensemble.tune(technique={tech!r}, evaluations={res.evaluations}{opts})"
            how += f"{tech}: no valid result; "
        except ConfigurationError:
            raise  # seeds or a space the search refuses: our mistake, which random sampling would hide
        except Exception as exc:  # noqa: BLE001 - the benchmark must still produce numbers
            how += f"{tech}: {type(exc).__name__}: {str(exc)[:100]}; "
    how = f"random sampling ({how})"
    from concurrent.futures import ThreadPoolExecutor

    rng = np.random.default_rng(seed)
    configs = seeds + app.space().narrowed(require or []).sample(rng, max(0, budget - len(seeds)))
    runner = app.runner()
    with ThreadPoolExecutor(parallelism) as pool:
        builds = list(pool.map(runner.build, configs))
    best, best_t = None, float("inf")
    for c, b in zip(configs, builds):
        r = runner.measure(b)
        if r.state == "OK" and r.time is not None and r.time < best_t:
            best, best_t = c, r.time
    return best, how


def _top_configs(database: str, run: str, k: int) -> list[dict[str, Any]]:
    """The ``k`` fastest distinct configurations measured OK in a run, fastest first."""
    from ensemble.storage import open_storage

    store = open_storage(database)
    try:
        rec = store.get_run(run)
        if rec is None:
            return []
        rows = sorted((t for t in store.trials(rec.id) if t.state == "OK" and t.value is not None
                       and not t.duplicate), key=lambda t: float(t.value or 0.0))
    finally:
        store.close()
    out: list[dict[str, Any]] = []
    seen: set[str] = set()
    for t in rows:
        if t.config_hash not in seen:
            seen.add(t.config_hash)
            out.append(json.loads(t.config_json))
        if len(out) == k:
            break
    return out


def _trial_states(database: str, run: str) -> dict[str, int]:
    """How many of a run's trials (duplicates left out) ended in each state: OK, FAILED, TIMEOUT, INVALID.

    Why: a search record should say what its budget went to. A search that spent most of it on kernels that
    did not compile or launch looks like a weak search in the figures alone.
    """
    from ensemble.storage import open_storage

    store = open_storage(database)
    try:
        rec = store.get_run(run)
        states = [str(getattr(t.state, "value", t.state)) for t in store.trials(rec.id) if not t.duplicate] if rec else []
    finally:
        store.close()
    return {k: states.count(k) for k in sorted(set(states))}


def confirm_best(app: Any, be: Any, st: Any, configs: list[dict[str, Any]], rounds: int, repeats: int,
                 peak: float, parallelism: int = 1) -> dict[str, Any]:
    """Re-time the search's top configurations against the copy measured right before each, then the pick again.

    Why: a search's best is its fastest single measurement, and the roofline
    it is compared with comes from one copy measured at the start of the
    process, minutes or an hour earlier; the GPU's clocks and the other
    jobs on the host move both (issue 17: j3d7pt at 93.3 and 96.0 % in two
    runs of the same search). Here each of ``rounds`` rounds measures the
    copy, then every candidate; a candidate's fraction of the roofline is
    the median over the rounds of roofline(that round's copy) / its time.
    The pick is the candidate with the highest median; the number reported
    comes from ``rounds`` further rounds of copy and pick only, so the
    choice among the candidates does not bias it upwards.

    After each copy one untimed measurement (the round's first candidate)
    comes before the timed ones, and the candidates' order rotates from
    round to round. Why: on the H100 the first measurement after the 2 GiB
    copy ran about 13 % slow on j3d7pt (0.8 ms kernels; 2 warm-up and 10
    timed launches, median), the ones after it did not (2026-11-27, first
    device run of this function: the first candidate of every round at
    82-83 % of the roofline, the others at 92-95 %, and the pick, alone
    after the copy in the final rounds, at 79-83 %).

    The candidates compile ``parallelism`` at a time (nvcc runs on the
    host's CPUs while the GPU is idle), so ten candidates cost about what
    three did.
    """
    runner = app.runner()
    saved = dict(runner.timing)
    runner.timing.update(repeats=repeats, warmup=2)
    nbytes, flops = st.compulsory_bytes(), st.flops()

    def frac(bw: float, t: float | None) -> float | None:
        return None if not t or t <= 0 else max(nbytes / bw, flops / peak) / t

    try:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(max(1, parallelism)) as pool:
            builds = list(zip(configs, pool.map(runner.build, configs)))
        per: list[list[float]] = [[] for _ in builds]
        for r in range(rounds):
            bw = be.copy_bandwidth(1 << 31)
            order = [(r + j) % len(builds) for j in range(len(builds))]
            if order:
                runner.measure(builds[order[0]][1])  # settle after the copy: untimed
            for i in order:
                res = runner.measure(builds[i][1])
                f = frac(bw, res.time) if res.state == "OK" else None
                if f is not None:
                    per[i].append(f)
        meds = [statistics.median(v) if v else 0.0 for v in per]
        pick = int(np.argmax(meds))
        fracs, times, bws = [], [], []
        for _ in range(rounds):
            bw = be.copy_bandwidth(1 << 31)
            runner.measure(builds[pick][1])  # settle after the copy: untimed
            res = runner.measure(builds[pick][1])
            f = frac(bw, res.time) if res.state == "OK" else None
            if f is not None:
                fracs.append(f)
                times.append(float(res.time or 0.0))
                bws.append(bw)
    finally:
        runner.timing = saved
    return {"config": builds[pick][0] if builds else None,
            "roof_frac": statistics.median(fracs) if fracs else None,
            "time": statistics.median(times) if times else None,
            "copy_gbs": statistics.median(bws) / 1e9 if bws else None,
            "rounds": rounds, "candidates": [{"config": c, "median_pct_roofline": 100.0 * m}
                                             for (c, _), m in zip(builds, meds)]}


def _measure(app: Any, config: dict[str, Any], repeats: int) -> dict[str, Any]:
    runner = app.runner()
    saved = dict(runner.timing)
    runner.timing.update(repeats=repeats, warmup=2)
    try:
        built = runner.build(config)
        res = runner.measure(built)
    finally:
        runner.timing = saved
    out: dict[str, Any] = {"state": res.state, "reason": res.reason, "time": res.time, "config": config}
    out.update({k: v for k, v in res.metrics.items()})
    if isinstance(built, tuple) and hasattr(built[1], "registers"):
        out["registers"] = built[1].registers
        out["spill_stores"] = built[1].spill_stores
    return out


def _row(st: Any, base: dict[str, Any], best: dict[str, Any], bw: float, peak: float) -> dict[str, Any]:
    nbytes = st.compulsory_bytes()
    flops = st.flops()
    roof = max(nbytes / bw, flops / peak)
    r: dict[str, Any] = {"stencil": st.name, "size": st.shape[0], "bytes": nbytes, "flops": flops,
                         "roofline_ms": roof * 1e3, "bound": "memory" if nbytes / bw >= flops / peak else "compute"}
    for tag, m in (("base", base), ("tuned", best)):
        t = float(m.get("time") or 0.0)
        ok = m.get("state") == "OK" and t > 0
        r[f"{tag}_ms"] = t * 1e3 if ok else None
        r[f"{tag}_gbs"] = nbytes / t / 1e9 if ok else None
        r[f"{tag}_copy_frac"] = nbytes / t / bw if ok else None
        r[f"{tag}_roof_frac"] = roof / t if ok else None
        r[f"{tag}_regs"] = m.get("registers")
        r[f"{tag}_spills"] = m.get("spill_stores")
        r[f"{tag}_state"] = m.get("state") if ok else f"{m.get('state')}: {m.get('reason')}"
    r["speedup"] = (r["base_ms"] / r["tuned_ms"]) if r["base_ms"] and r["tuned_ms"] else None
    r["tuned_config"] = best.get("config")
    return r


def _table(rows: list[dict[str, Any]], title: str) -> str:
    def f(v: Any, p: int = 2) -> str:
        return "-" if v is None else (f"{v:.{p}f}" if isinstance(v, float) else str(v))

    def pct(v: Any) -> str:
        return "-" if v is None else f"{100 * float(v):.0f}"
    lines = [f"### {title}", "",
             ("| stencil | N | bound | roofline ms | base ms | base % roof | tuned ms | tuned % roof | tuned GB/s "
              "| % copy BW | speedup | regs base/tuned | spills tuned |"),
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        lines.append(
            f"| {r['stencil']} | {r['size']} | {r['bound']} | {f(r['roofline_ms'], 3)} | {f(r['base_ms'], 3)} | "
            f"{pct(r['base_roof_frac'])} | {f(r['tuned_ms'], 3)} | "
            f"{pct(r['tuned_roof_frac'])} | {f(r['tuned_gbs'], 0)} | "
            f"{pct(r['tuned_copy_frac'])} | {f(r['speedup'])} | "
            f"{f(r['base_regs'])}/{f(r['tuned_regs'])} | {f(r['tuned_spills'])} |")
    return "\n".join(lines)


def _app(**kw: Any) -> Any:
    from apps.stencil.app import StencilApp

    ns = argparse.Namespace(repeats=5, warmup=1, discard_first=0, statistic="median", verify_sample=200_000, **kw)
    return StencilApp(ns)


def _required(app: Any, exprs: list[str]) -> Any:
    """The app's space narrowed by ``--require`` (``SearchSpace.narrowed``), for the seeds and the checks here;
    the searches get the same expressions through ``tune(require=...)``.

    Why: a paired run compares a space with and without one of its parameters (session 28: ``l2pf == 0``
    while ``l2pf`` was in the default space), or narrows it otherwise (``sd == 'z'``), without editing the app.
    A bad expression stops the run here, naming it, instead of failing every search.
    """
    from ensemble.errors import ConfigurationError

    try:
        return app.space().narrowed(exprs)
    except ConfigurationError as exc:
        raise SystemExit(f"bench_stencil_gpu: {exc}") from None


def _pct(row: dict[str, Any]) -> float | None:
    v = row.get("tuned_roof_frac")
    return None if v is None else 100.0 * float(v)


def roofline_record(st: Any, rows: list[dict[str, Any]], device: str, bw: float, peak: float,
                    budget: int) -> dict[str, Any]:
    """One stencil's record over its searches: median, worst and best % of the roofline, and the baseline's.

    A search that found nothing valid counts as 0 % (it is part of what a user would get).
    """
    import statistics as stats

    pcts = [_pct(r) or 0.0 for r in rows]
    base = rows[0].get("base_roof_frac") if rows else None
    searches = [{"seed": r.get("seed"), "pct_roofline": _pct(r), "tuned_ms": r.get("tuned_ms"),
                 "pct_roofline_vs_first_copy": (None if r.get("single_roof_frac") is None
                                                else 100.0 * float(r["single_roof_frac"])),
                 "confirm": r.get("confirm"),
                 "registers": r.get("tuned_regs"), "spill_stores": r.get("tuned_spills"),
                 "config": r.get("tuned_config"), "search": r.get("search"), "seconds": r.get("seconds")}
                for r in rows]
    return {"stencil": st.name, "size": st.shape[0], "budget": budget, "searches": searches,
            "median_pct_roofline": stats.median(pcts) if pcts else None,
            "worst_pct_roofline": min(pcts) if pcts else None,
            "best_pct_roofline": max(pcts) if pcts else None,
            "baseline_pct_roofline": None if base is None else 100.0 * float(base),
            "baseline_ms": rows[0].get("base_ms") if rows else None,
            "baseline_registers": rows[0].get("base_regs") if rows else None,
            "device": device, "copy_bandwidth_gbs": bw / 1e9, "fp64_peak_tflops": peak / 1e12,
            "bytes": st.compulsory_bytes(), "flops": st.flops(),
            "roofline_ms": max(st.compulsory_bytes() / bw, st.flops() / peak) * 1e3,
            "bound": "memory" if st.compulsory_bytes() / bw >= st.flops() / peak else "compute"}


def _save_records(args: argparse.Namespace, records: list[dict[str, Any]]) -> None:
    os.makedirs(args.out, exist_ok=True)
    with open(os.path.join(args.out, "cuda_roofline.json"), "w") as f:
        json.dump(records, f, indent=1, default=str)


def plot_records(path: str, out: str | None = None, title: str | None = None) -> str:
    """Bar chart of % of roofline per stencil (baseline, tuned median, tuned best; worst as a whisker).

    ``title`` replaces the default, which names the first record's device and copy bandwidth (right for one
    run, wrong for a file merged from several).
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with open(path) as f:
        recs = json.load(f)
    names = [r.get("label") or r["stencil"] for r in recs]  # a merged file may label a second run of a stencil
    x = np.arange(len(recs))
    fig, ax = plt.subplots(figsize=(1.1 * len(recs) + 3, 3.6))
    base = [r["baseline_pct_roofline"] or 0 for r in recs]
    med = [r["median_pct_roofline"] or 0 for r in recs]
    best = [r["best_pct_roofline"] or 0 for r in recs]
    worst = [r["worst_pct_roofline"] or 0 for r in recs]
    ax.bar(x - 0.27, base, 0.27, label="baseline", color="#bbbbbb")
    ax.bar(x, med, 0.27, yerr=[[m - w for m, w in zip(med, worst)], [0] * len(med)], capsize=3,
           label="tuned, median (whisker: worst)", color="#4477aa")
    ax.bar(x + 0.27, best, 0.27, label="tuned, best", color="#66ccee")
    ax.axhline(100, color="k", lw=0.6)
    ax.set_xticks(x, names, rotation=20)
    ax.set_ylabel("% of roofline")
    r0 = recs[0] if recs else {}
    n = len(r0.get("searches", []))
    ax.set_title(title or f"{r0.get('device', '?')}: copy {r0.get('copy_bandwidth_gbs', 0):.0f} GB/s; "
                 f"budget {r0.get('budget')}, {n} search(es) per stencil", fontsize=9)
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    fig.tight_layout()
    out = out or os.path.splitext(path)[0] + ".png"
    fig.savefig(out, dpi=120)
    plt.close(fig)
    return out


def records_table(path: str) -> str:
    """Markdown table of a cuda_roofline.json (one row per stencil)."""
    with open(path) as f:
        recs = json.load(f)

    def f1(v: Any) -> str:
        return "-" if v is None else f"{float(v):.1f}"
    head = ("| stencil | N | bound | roofline ms | searches x budget | baseline % | median % | worst % | best % "
            "| best search: registers, kernel family |")
    lines = [head, "|---|---|---|---|---|---|---|---|---|---|"]
    for r in recs:
        best = max(r["searches"], key=lambda s: s.get("pct_roofline") or 0.0)
        c = best.get("config") or {}
        fam = (f"fis={c.get('fis')}, sd={c.get('sd')}, ring={c.get('ring')}, smem={c.get('smem')}, "
               f"minb={c.get('minb')}, maxrreg={c.get('maxrreg')}, block={c.get('bx')}x{c.get('by')}x{c.get('bz')}")
        lines.append(f"| {r['stencil']} | {r['size']} | {r['bound']} | {r['roofline_ms']:.3f} | "
                     f"{len(r['searches'])} x {r['budget']} | {f1(r['baseline_pct_roofline'])} | "
                     f"{f1(r['median_pct_roofline'])} | {f1(r['worst_pct_roofline'])} | {f1(r['best_pct_roofline'])} "
                     f"| {best.get('registers')}, {fam} |")
    return "\n".join(lines)


def part_cuda(args: argparse.Namespace, report: dict[str, Any]) -> None:
    be = report.get("_cuda_backend")
    if be is None:
        from measurement.cuda import CudaBackend

        be = CudaBackend(0, hold=args.hold)
    report["_cuda_backend"] = be
    report["cuda_hold"] = bool(getattr(be, "hold", False))
    bw = be.copy_bandwidth(1 << 31)
    peaks = _peaks(be)
    report["device"] = be.name
    report["copy_bw_gbs"] = bw / 1e9
    report["peaks"] = peaks
    print(f"device {be.name}: copy {bw / 1e9:.0f} GB/s, FP64 peak {peaks['fp64_peak'] / 1e12:.1f} TFLOP/s", flush=True)
    rows = []
    records: list[dict[str, Any]] = []
    names = args.stencils.split(",")
    with tempfile.TemporaryDirectory() as tmp:
        for name in names:
            app = _app(stencil=name, backend="cuda", size=args.size, cuda_opt_in=args.opt_in)
            app.device_backend = be
            st = app.stencil
            space = _required(app, args.require or [])
            base = _measure(app, _cuda_seeds(st)[0], args.repeats)
            per_search = []
            for seed in range(args.seed, args.seed + args.searches):
                t0 = time.time()
                where: dict[str, str] = {}
                seeds = [c for c in _cuda_seeds(st, merge=args.merge_seed, more=args.more_seeds, opt_in=args.opt_in)
                         if space.is_valid(c)]  # --require may leave some out
                best_cfg, how = _tune(app, seeds, args.budget, args.parallelism, f"{name}-s{seed}", tmp,
                                      seed, where, args.technique, args.require, args.technique_options)
                conf = None
                if best_cfg and args.confirm > 0:
                    cands = (_top_configs(where["database"], where["run"], args.confirm) if where else []) or [best_cfg]
                    conf = confirm_best(app, be, st, cands, args.confirm_rounds, args.repeats, peaks["fp64_peak"],
                                        args.parallelism)
                    best_cfg = conf["config"] or best_cfg
                best = _measure(app, best_cfg, args.repeats) if best_cfg else {"state": "FAILED", "reason": how}
                paired = conf is not None and conf["roof_frac"] is not None
                if (not paired and best.get("time") and base.get("time") and best["time"] > base["time"]
                        and base["state"] == "OK" and space.is_valid(base["config"])):
                    best = base  # the baseline was in the budget: the tuner's best can't be worse
                    # (with --confirm the baseline, one of the search's results, competed in the same rounds)
                r = _row(st, base, best, bw, peaks["fp64_peak"])
                if paired:
                    assert conf is not None
                    # the paired figures replace those against the start-of-run copy, which stay beside them
                    r["single_roof_frac"], r["single_ms"] = r["tuned_roof_frac"], r["tuned_ms"]
                    r["tuned_roof_frac"] = conf["roof_frac"]
                    r["tuned_ms"] = conf["time"] * 1e3
                    r["tuned_gbs"] = st.compulsory_bytes() / conf["time"] / 1e9
                    r["tuned_copy_frac"] = r["tuned_gbs"] / conf["copy_gbs"]
                    r["confirm"] = {k: v for k, v in conf.items() if k != "config"}
                r["search"] = how
                if where:
                    r["trial_states"] = _trial_states(where["database"], where["run"])
                r["budget"] = args.budget
                r["seed"] = seed
                if args.require:
                    r["require"] = list(args.require)
                r["seconds"] = time.time() - t0
                per_search.append(r)
                rows.append(r)
                report["cuda"] = rows
                _save(args, report)
                print(json.dumps(r, default=str), flush=True)
                records = [x for x in records if x["stencil"] != name]
                records.append(roofline_record(st, per_search, be.name, bw, peaks["fp64_peak"], args.budget))
                report["cuda_roofline"] = records
                _save_records(args, records)  # after every search: a cut run keeps what it measured
            rec = records[-1]
            print(f"{name}: % of roofline median {rec['median_pct_roofline']:.1f}, worst "
                  f"{rec['worst_pct_roofline']:.1f}, best {rec['best_pct_roofline']:.1f}, baseline "
                  f"{rec['baseline_pct_roofline'] or 0:.1f} ({len(per_search)} searches)", flush=True)
            fell = sum(str(r.get("search", "")).startswith("random sampling") for r in per_search)
            if fell:  # a technique failed to run: those searches are not the ensemble's, say so where it is read
                print(f"{name}: WARNING {fell} of {len(per_search)} searches fell back to random sampling "
                      f"(see each record's 'search')", flush=True)
            del app
            gc.collect()  # frees this stencil's device arrays before the next one uploads
    report["cuda"] = rows
    print(_table(rows, f"CUDA (csTuner space) on {be.name}, budget {args.budget}"), flush=True)


def part_opencl(args: argparse.Namespace, report: dict[str, Any]) -> None:
    from measurement.opencl import OpenCLBackend

    bw = report.get("copy_bw_gbs", 0) * 1e9
    peak32 = report.get("peaks", {}).get("fp32_peak", 0)
    if not bw:
        try:
            from measurement.cuda import CudaBackend

            be = CudaBackend(0)
            bw = be.copy_bandwidth(1 << 31)
            peak32 = _peaks(be)["fp32_peak"]
            report["copy_bw_gbs"] = bw / 1e9
        except Exception as exc:  # noqa: BLE001
            print(f"no CUDA copy bandwidth ({exc}); using 3.0e12", flush=True)
            bw, peak32 = 3.0e12, 6.7e13
    rows = []
    dev = OpenCLBackend(args.platform).name
    with tempfile.TemporaryDirectory() as tmp:
        for (p, d, r) in SYNTHETIC[args.synthetic_from:args.synthetic]:
            t0 = time.time()
            app = _app(pattern=p, dims=d, radius=r, backend="opencl", size=args.ocl_size, platform=args.platform,
                       device=None, dtype="float32", weights_seed=0)
            st = app.stencil
            base = _measure(app, _opencl_seeds(st)[0], args.repeats)
            best_cfg, how = _tune(app, _opencl_seeds(st), args.ocl_budget, args.parallelism, st.name, tmp, args.seed,
                                  techniques=args.technique, technique_options=args.technique_options)
            best = _measure(app, best_cfg, args.repeats) if best_cfg else {"state": "FAILED", "reason": how}
            if best.get("time") and base.get("time") and best["time"] > base["time"] and base["state"] == "OK":
                best = base
            row = _row(st, base, best, bw, peak32)
            row["search"] = how
            row["budget"] = args.ocl_budget
            row["seconds"] = time.time() - t0
            rows.append(row)
            report["opencl"] = rows
            _save(args, report)
            print(json.dumps(row, default=str), flush=True)
    report["opencl"] = rows
    report["opencl_device"] = dev
    print(_table(rows, f"OpenCL (Garvey space) on {dev}, float32 {args.ocl_size}^3, budget {args.ocl_budget}"),
          flush=True)


def part_timers(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Event timers vs wall clock around launch + synchronize, same configuration, both APIs."""
    from apps.stencil.cuda_gen import cuda_baseline
    from apps.stencil.opencl_gen import opencl_baseline

    rows = []
    n = args.size or 512
    cu = _app(stencil="j3d7pt", backend="cuda", size=n)
    if "_cuda_backend" in report:
        cu.device_backend = report["_cuda_backend"]
    ocl = _app(pattern="star", dims=3, radius=1, backend="opencl", size=n, platform=args.platform, device=None,
               dtype="float64", weights_seed=0)
    for label, app, cfg in (("CUDA j3d7pt", cu, cuda_baseline()), ("OpenCL star3d_r1 f64", ocl, opencl_baseline()),
                            ("CUDA j3d7pt z-streamed", cu, {**cuda_baseline(), "sd": "z", "sb": 8, "bx": 64})):
        runner = app.runner()
        built = runner.build(cfg)
        ev, wall = [], []
        for _ in range(args.timer_rounds):
            runner.timing.update(repeats=10, warmup=1)
            res = runner.measure(built)
            ev.append(res.metrics["event_median"])
            wall.append(res.metrics["wall_median"])
        ratio = [w / e for w, e in zip(wall, ev)]
        rows.append({"what": label, "event_ms_median": statistics.median(ev) * 1e3,
                     "event_ms_spread": (max(ev) - min(ev)) * 1e3, "wall_ms_median": statistics.median(wall) * 1e3,
                     "wall_over_event": statistics.median(ratio), "rounds": args.timer_rounds})
        print(json.dumps(rows[-1]), flush=True)
    report["timers"] = rows


def _save(args: argparse.Namespace, report: dict[str, Any]) -> None:
    """Write the report so far (a killed run keeps what it measured)."""
    os.makedirs(args.out, exist_ok=True)  # a fresh --out folder must not lose a finished search
    path = os.path.join(args.out, f"bench_stencil_{'_'.join(args.part or ['all'])}.json")
    with open(path, "w") as f:
        json.dump({k: v for k, v in report.items() if not k.startswith("_")}, f, indent=1, default=str)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", action="append", choices=("cuda", "opencl", "timers"))
    ap.add_argument("--stencils", default="j3d7pt,j3d27pt,helmholtz,cheby,hypterm,addsgd4,addsgd6,rhs4center")
    ap.add_argument("--size", type=int, default=None, help="cube edge for the CUDA stencils (default: paper sizes)")
    ap.add_argument("--budget", type=int, default=40, help="unique evaluations per CUDA stencil")
    ap.add_argument("--ocl-budget", type=int, default=24, help="unique evaluations per OpenCL stencil")
    ap.add_argument("--ocl-size", type=int, default=256)
    ap.add_argument("--synthetic", type=int, default=12, help="how many synthetic OpenCL stencils")
    ap.add_argument("--synthetic-from", type=int, default=0, help="skip the first synthetic stencils")
    ap.add_argument("--more-seeds", action="store_true", help="seed the CUDA search with 8 more streaming shapes")
    ap.add_argument("--merge-seed", action="store_true",
                    help="seed the CUDA search with 2 x 2 points per thread too (bmy=2, bmz=2; screened, not a "
                         "default: docs/STENCILS.md)")
    ap.add_argument("--platform", default="NVIDIA")
    ap.add_argument("--parallelism", type=int, default=12)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--timer-rounds", type=int, default=5)
    ap.add_argument("--seed", type=int, default=1, help="seed of the first search")
    ap.add_argument("--searches", type=int, default=1, help="searches per CUDA stencil (seeds seed, seed+1, ...)")
    ap.add_argument("--confirm", type=int, default=10, metavar="K",
                    help="re-time each search's K fastest configurations against the copy measured right before "
                         "them and report the pick from fresh rounds (0: the search's best against the first copy; "
                         "10 since issue 17's re-timing study, docs/STENCILS.md, 3 before)")
    ap.add_argument("--confirm-rounds", type=int, default=5, help="rounds of copy + candidates for --confirm")
    ap.add_argument("--plot", metavar="RECORDS_JSON", help="only draw the plot of a cuda_roofline.json and exit")
    ap.add_argument("--technique", action="append", help="technique(s) to try in order (default: default, GA)")
    ap.add_argument("--technique-option", action="append", default=[], metavar="KEY=VALUE",
                    help="an option of the techniques tried, as for ensemble-tuner (VALUE as JSON, else text), e.g. "
                         "partner=null for the default's GP leading alone; repeatable")
    from apps.stencil.cuda_gen import OPT_IN_PARAMS

    ap.add_argument("--opt-in", action="append", metavar="PARAM", choices=OPT_IN_PARAMS,
                    help=f"add a CUDA parameter built but not yet in the default space ({', '.join(OPT_IN_PARAMS)}: "
                         "docs/STENCILS.md); repeatable")
    ap.add_argument("--require", action="append", metavar="EXPR",
                    help="add a constraint to every CUDA search's space, e.g. \"l2pf == 0\" with --opt-in l2pf (a paired "
                         "run's arm without the parameter); seeds outside it are left out; repeatable")
    ap.add_argument("--hold", action="store_true",
                    help="time CUDA launches behind a hold, without the host's launch overhead "
                         "(measurement/cuda_hold.py; off by default until measured: docs/STENCILS.md)")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args(argv)
    from ensemble.cli import technique_options
    from ensemble.settings import SettingsError

    try:
        args.technique_options = technique_options(args.technique_option)
    except SettingsError as exc:
        ap.error(str(exc))
    if args.technique_options:  # refused here, not per search: a search that fails to start falls back to sampling
        from ensemble.errors import TechniqueError
        from ensemble.registry import create_technique

        for name in args.technique or TECHNIQUES:
            try:
                create_technique(name, seed=0, **args.technique_options)
            except TechniqueError as exc:
                ap.error(f"--technique-option: {exc}; every technique tried must take the options: name those "
                         f"that do with --technique (tried: {', '.join(args.technique or TECHNIQUES)}), "
                         "e.g. --technique default")
    if args.confirm < 0 or args.confirm_rounds < 1:
        ap.error(f"--confirm must be >= 0 (0: off) and --confirm-rounds >= 1; got {args.confirm} and "
                 f"{args.confirm_rounds} (defaults 10 and 5)")
    if args.plot:
        print(plot_records(args.plot))
        print(records_table(args.plot))
        return 0
    report: dict[str, Any] = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "argv": argv}
    for part in args.part or ["cuda", "opencl", "timers"]:
        try:
            {"cuda": part_cuda, "opencl": part_opencl, "timers": part_timers}[part](args, report)
        except Exception as exc:  # noqa: BLE001 - keep the other parts' numbers
            import traceback

            traceback.print_exc()
            report[f"{part}_error"] = repr(exc)
        _save(args, report)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
