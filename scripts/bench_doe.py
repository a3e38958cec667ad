"""DLMT (Bruel et al., CCGRID'19) beside random search and the ensembles, and the design study.

Two parts, one command each:

* ``replay`` (default): on the recorded spaces of ../shared/data/spaces, the
  mean over seeds of best-found / optimum after at most 25, 56 and 125 unique
  evaluations, for DLMT, random search, the default ensemble and the
  design-card ensemble (``cstuner-ensemble``; when it is not registered,
  ``AUCBandit`` over NelderMead / SimulatedAnnealing / IslandGA, labelled so).
  Each budget is a separate run (the techniques size themselves to their
  budget). A run that measured only failures counts as the space's worst
  valid value (the convention of scripts/bench_search.py). The paper's
  Laplacian figures (Table VIII, 56 points) are quoted in the table.

      python -m scripts.bench_doe replay --seeds 25 --jobs 2 --json-out docs/doe_results/replay.json

* ``designs``: appendix F in spirit: D-criterion of Fedorov designs against
  candidate-set size and sampling strategy (uniform, biased, biased+normal)
  for the linear and quadratic models of Table 2 (fewer factors, said in the
  output), and Fedorov against coordinate exchange on one smaller case.

      python -m scripts.bench_doe designs --json-out docs/doe_results/designs.json

* ``hls``: the same four tuners on the real FPGA flow (apps/hls_flags,
  yosys + nextpnr-ice40), every distinct configuration measured once into a
  cache that later runs replay (``hls-table`` measures a uniform sample
  into a table that can pre-fill it); docs/DOE.md has the command.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SPACES = sorted(str(p) for p in (ROOT.parent / "shared" / "data" / "spaces").glob("*.json.gz"))
#: Bruel et al. CCGRID'19 Table VIII (Laplacian, K40c; mean slowdown of 1000 runs; DLMT used 54.84 points on average)
PAPER_LAPLACIAN = {"RS": 1.10, "LHS": 1.17, "GS": 6.46, "GSR": 1.23, "GA": 1.12, "LM": 1.02, "DLMT": 1.01}
DESIGN_CARD = "cstuner-ensemble"
FALLBACK_ARMS = ("NelderMead", "SimulatedAnnealing", "IslandGA")


def _design_card() -> tuple[str, Any]:
    from ensemble import registry

    if DESIGN_CARD in registry.technique_names():
        return DESIGN_CARD, DESIGN_CARD
    from techniques.bandit import AUCBandit

    return "AUCBandit(NM,SA,IslandGA) [design-card stand-in]", lambda seed: AUCBandit(seed=seed, arms=FALLBACK_ARMS)


def _one_run(label: str, name: Any, path: str, budget: int, seed: int) -> float:
    """best / optimum of one run (only failures: the worst valid value)."""
    from scripts.bench_search import run_technique

    space = _SPACES.get(path) or _SPACES.setdefault(path, _load(path))
    mode = space.check_mode(None)
    scal = space.scalars(mode)
    f_opt, worst = float(scal[np.isfinite(scal)].min()), float(scal[np.isfinite(scal)].max())
    if callable(name):
        import scripts.bench_search as bs

        key = "_bench_doe_" + "".join(ch if ch.isalnum() else "_" for ch in label)
        setattr(bs, key, name)  # resolved below through the module, never through a global registry
        values = run_technique(f"scripts.bench_search:{key}", space, mode, budget, seed)
    else:
        values = run_technique(name, space, mode, budget, seed)
    finite = [v for v in values[:budget] if math.isfinite(v)]
    best = min(finite) if finite else worst
    return best / f_opt


_SPACES: dict[str, Any] = {}


class _DlmtVariant:
    """A DLMT factory with options (picklable for the worker pool)."""

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def __call__(self, seed: int | None = None) -> Any:
        from techniques.doe import DLMT

        return DLMT(seed=seed, **self.options)


def _pool_map(pool: Any, args: list[tuple[Any, ...]]) -> list[float]:
    if pool is None:
        return [_one_run(*a) for a in args]
    return list(pool.starmap(_one_run, args))


def replay(args: argparse.Namespace) -> dict[str, Any]:
    card_label, card = _design_card()
    techniques = [("DLMT", "dlmt"), ("random search", "Random"), ("default ensemble", "default"), (card_label, card)]
    techniques = [t for t in techniques if t[0].split(" ")[0].lower() in args.only or not args.only]
    for variant in args.dlmt_variant:  # LABEL=JSON options: a configured DLMT beside the others
        vlabel, _, opts = variant.partition("=")
        techniques.append((f"DLMT[{vlabel}]", _DlmtVariant(json.loads(opts or "{}"))))
    report: dict[str, Any] = {"command": "python -m scripts.bench_doe " + " ".join(sys.argv[1:]),
                              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                              "seeds": args.seeds, "budgets": args.budgets, "paper_laplacian_56": PAPER_LAPLACIAN,
                              "spaces": {}}
    # load what every run needs once, then fork one pool for the whole table
    import statsmodels.formula.api  # noqa: F401 - imported before the fork, not once per worker

    for path in args.spaces:
        _SPACES[path] = _load(path)
    pool = None
    if args.jobs > 1:
        import multiprocessing

        pool = multiprocessing.get_context("fork").Pool(args.jobs)
    for path in args.spaces:
        sname = Path(path).name.split(".")[0]
        report["spaces"][sname] = {}
        for label, name in techniques:
            row = {}
            for budget in args.budgets:
                t0 = time.perf_counter()
                ratios = _pool_map(pool, [(label, name, path, budget, args.seed + s) for s in range(args.seeds)])
                row[str(budget)] = {"mean": float(np.mean(ratios)),
                                    "sem": float(np.std(ratios, ddof=1) / math.sqrt(len(ratios))) if len(ratios) > 1 else 0.0,
                                    "per_seed": ratios, "seconds": time.perf_counter() - t0}
                print(f"{sname:22s} {label:45s} {budget:4d}: {row[str(budget)]['mean']:.3f} "
                      f"± {row[str(budget)]['sem']:.3f} ({row[str(budget)]['seconds']:.0f} s)", file=sys.stderr, flush=True)
            report["spaces"][sname][label] = row
            if args.json_out:
                Path(args.json_out).write_text(json.dumps(report, indent=1))
    if pool is not None:
        pool.close()
    return report


def replay_markdown(report: dict[str, Any]) -> str:
    budgets = [str(b) for b in report["budgets"]]
    lines = [f"Mean best/optimum over {report['seeds']} seeds (lower is better; 1 = the optimum), "
             "at budgets " + ", ".join(budgets) + " unique evaluations.", "",
             "| space | tuner | " + " | ".join(budgets) + " |", "|---|---|" + "---|" * len(budgets)]
    for sname, rows in report["spaces"].items():
        for label, row in rows.items():
            cells = [f"{row[b]['mean']:.3f} ± {row[b]['sem']:.3f}" if b in row else "-" for b in budgets]
            lines.append(f"| {sname} | {label} | " + " | ".join(cells) + " |")
    paper = report["paper_laplacian_56"]
    lines += ["", "Paper (Bruel et al. CCGRID'19, Table VIII, Laplacian on a K40c, 1000 runs, at most 125 points; "
              "DLMT used 54.84 on average): " + ", ".join(f"{k} {v:.2f}" for k, v in paper.items()) + "."]
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------
# appendix F in spirit: D-criterion against candidate-set size and strategy
# ---------------------------------------------------------------------------

def designs(args: argparse.Namespace) -> dict[str, Any]:
    from ensemble.space import Enum, SearchSpace
    from techniques.doe.design import (
        candidate_set,
        code_columns,
        coordinate_exchange,
        d_criterion,
        fedorov,
    )
    from techniques.doe.factors import factors_of
    from techniques.doe.models import auto_model, model_matrix
    from techniques.doe.subspace import SubSpace

    levels = [round(-1 + 0.2 * i, 1) for i in range(11)]  # Section IV-A: {-1, -0.8, ..., 1}
    out: dict[str, Any] = {"command": "python -m scripts.bench_doe " + " ".join(sys.argv[1:]),
                           "factors": args.factors, "levels": levels, "repeats": args.repeats, "study": [], "exchange": []}
    space = SearchSpace().add(*[Enum(f"x{i}", levels) for i in range(args.factors)])
    sub = SubSpace(space)
    facs = factors_of(space)
    for degree in ("linear", "quadratic"):
        model = auto_model(facs, degree)
        p = model.width()
        n = p + 9  # Table 2: 70 runs for 61 coefficients, 130 for 121
        for size in args.sizes:
            for strategy in ("uniform", "biased", "biased+normal"):
                if degree == "linear" and strategy == "biased+normal":
                    continue  # Table 1: the normal samples serve the quadratic model
                ds = []
                t0 = time.perf_counter()
                for r in range(args.repeats):
                    rng = np.random.default_rng(1000 + r)
                    cands, _ = candidate_set(sub, rng, size, strategy=strategy, numeric=space.names)
                    x = code_columns(model_matrix(model, cands)[0], ref=None)
                    # the paper's coding: factors in [-1, 1] as they are (no rescaling by the sample's range)
                    raw = model_matrix(model, cands)[0]
                    design = fedorov(x, n, rng)
                    ds.append(d_criterion(raw[design.rows]))
                row = {"model": degree, "p": p, "n": n, "candidates": size, "strategy": strategy,
                       "D_mean": float(np.mean(ds)), "D_sd": float(np.std(ds, ddof=1)) if len(ds) > 1 else 0.0,
                       "seconds": time.perf_counter() - t0}
                out["study"].append(row)
                print(f"{degree:9s} K={size:5d} {strategy:14s} D = {row['D_mean']:.4f} ± {row['D_sd']:.4f} "
                      f"({row['seconds']:.1f} s)", file=sys.stderr, flush=True)
                if args.json_out:
                    Path(args.json_out).write_text(json.dumps(out, indent=1))
    # Fedorov vs coordinate exchange, 4 factors x 11 levels, quadratic model, full candidate set
    small = SearchSpace().add(*[Enum(f"x{i}", levels) for i in range(4)])
    sfac = factors_of(small)
    model = auto_model(sfac, "quadratic")
    p = model.width()
    n = p + 4
    cands, _ = candidate_set(SubSpace(small), np.random.default_rng(0), 20_000)
    full = model_matrix(model, cands)[0]
    for r in range(args.repeats):
        rng = np.random.default_rng(2000 + r)
        t0 = time.perf_counter()
        fd = fedorov(full, n, rng)
        tf = time.perf_counter() - t0
        start = [cands[i] for i in rng.choice(len(cands), n, replace=False)]
        t0 = time.perf_counter()
        ce, passes = coordinate_exchange(start, {f.name: list(f.levels or ()) for f in sfac},
                                         lambda cs: model_matrix(model, cs)[0], small.is_valid)
        tc = time.perf_counter() - t0
        row = {"repeat": r, "p": p, "n": n, "candidates": len(cands), "fedorov_D": fd.d, "fedorov_s": tf,
               "coordinate_D": d_criterion(model_matrix(model, ce)[0]), "coordinate_s": tc, "passes": passes}
        out["exchange"].append(row)
        print(f"exchange r={r}: Fedorov D={row['fedorov_D']:.4f} ({tf:.2f} s), coordinate D={row['coordinate_D']:.4f} "
              f"({tc:.2f} s, {passes} passes)", file=sys.stderr, flush=True)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(out, indent=1))
    return out


# ---------------------------------------------------------------------------
# why DLMT does what it does on a space: its decisions, tallied over seeds
# ---------------------------------------------------------------------------

def _explain_one(path: str, budget: int, seed: int, options: dict[str, Any] | None = None) -> dict[str, Any]:
    from ensemble.technique import Trial
    from techniques.doe import DLMT

    space = _SPACES.get(path) or _SPACES.setdefault(path, _load(path))
    mode = space.check_mode(None)
    sspace = space.to_search_space(mode)
    best_config, _ = space.optimum()
    tech = DLMT(**(options or {}))
    tech.bind(sspace, budget=budget, rng=np.random.default_rng(seed))
    seen: dict[str, float] = {}
    while not tech.done and len(seen) < budget:
        configs = tech.propose(1)
        if not configs:
            break
        for c in configs:
            rec = space.records.get(space.key(c))
            v = math.inf if rec is None else space.scalar(rec)
            h = sspace.config_hash(c)
            dup = h in seen
            seen[h] = v
            tech.observe(Trial(config=c, config_hash=h, value=v, state="OK" if math.isfinite(v) else "FAILED",
                               technique="dlmt", duplicate=dup, evaluation=len(seen)))
    fixed: dict[str, Any] = {}  # what the steps fixed (a rest phase may release some later: ``released_steps``)
    for st in tech.steps:
        if "predicted_measured" in st and st.get("fixed"):
            fixed.update(st["fixed"])
    rest = tech.rest_log or {}
    values = list(seen.values())
    finite = [i for i, v in enumerate(values) if math.isfinite(v)]
    best_at = min(finite, key=lambda i: values[i]) if finite else -1
    return {"evaluations": len(seen), "steps": len(tech.steps),
            "empty_steps": sum(1 for s in tech.steps if "significant_factors" in s and not s["significant_factors"]),
            "unanalysed_steps": sum(1 for s in tech.steps if "model" in s and "anova" not in s),
            "fixed": len(fixed), "fixed_at_optimum": sum(1 for n, v in fixed.items() if best_config.get(n) == v),
            "failed_runs": sum(1 for v in seen.values() if not math.isfinite(v)),
            "overruled_predictions": sum(1 for s in tech.steps if s.get("levels_from")),
            "reused_rows": sum(int(s.get("reused") or 0) for s in tech.steps),
            "rest_evaluations": int(rest.get("measured", 0)), "released_steps": int(rest.get("released_steps", 0)),
            "best_in_rest": float(best_at >= len(values) - int(rest.get("measured", 0)) and best_at >= 0),
            "fixed_factors": sorted(fixed)}


def explain(args: argparse.Namespace) -> dict[str, Any]:
    out: dict[str, Any] = {"command": "python -m scripts.bench_doe " + " ".join(sys.argv[1:]), "budget": args.budget,
                           "seeds": args.seeds, "spaces": {}}
    for path in args.spaces:
        _SPACES[path] = _load(path)
        runs = [_explain_one(path, args.budget, args.seed + s, json.loads(args.options)) for s in range(args.seeds)]
        sname = Path(path).name.split(".")[0]
        summary = {k: float(np.mean([r[k] for r in runs])) for k in
                   ("evaluations", "steps", "empty_steps", "unanalysed_steps", "fixed", "fixed_at_optimum", "failed_runs",
                    "overruled_predictions", "reused_rows", "rest_evaluations", "released_steps", "best_in_rest")}
        counts: dict[str, int] = {}
        for r in runs:
            for n in r["fixed_factors"]:
                counts[n] = counts.get(n, 0) + 1
        summary["times_fixed"] = counts
        out["spaces"][sname] = summary
        print(sname, json.dumps(summary), file=sys.stderr, flush=True)
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(out, indent=1))
    return out


# ---------------------------------------------------------------------------
# a real application: Garvey's OpenCL stencil space on the local OpenCL device
# ---------------------------------------------------------------------------

def stencil(args: argparse.Namespace) -> dict[str, Any]:
    """DLMT and random search on the OpenCL stencil app; each configuration is measured once.

    Measurements are shared by every tuner and seed (a memo keyed by the
    configuration's hash), so the comparison is over the same measured
    values, as a replay of what was measured here.
    """
    from apps.stencil.app import StencilApp
    from ensemble import registry
    from ensemble.technique import Trial

    parser = argparse.ArgumentParser()
    StencilApp.add_arguments(parser)
    app = StencilApp(parser.parse_args(["--pattern", args.pattern, "--dims", str(args.dims), "--radius", "1",
                                        "--size", str(args.size), "--backend", "opencl", "--repeats", "3"]))
    space = app.space()
    memo: dict[str, float] = {}
    if args.memo:  # measurements of an earlier run of this command (same app flags), reused
        memo.update({h: (math.inf if v is None else float(v)) for h, v in json.loads(Path(args.memo).read_text())["memo"].items()})
    out: dict[str, Any] = {"command": "python -m scripts.bench_doe " + " ".join(sys.argv[1:]),
                           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "budget": args.budget,
                           "app": f"stencil {args.pattern} {args.dims}D r1 size {args.size} OpenCL", "runs": []}
    for seed in range(args.seeds):
        for name in args.techniques:
            tech = registry.create_technique(name, seed=seed)
            tech.bind(space, budget=args.budget, rng=np.random.default_rng(seed))
            values: list[float] = []
            seen: set[str] = set()
            while len(seen) < args.budget and not tech.done:
                configs = tech.propose(1)
                if not configs:
                    break
                for c in configs:
                    h = space.config_hash(c)
                    if h not in memo:
                        res = app.run(c, args.trial_limit)
                        ok = getattr(res, "state", "OK") == "OK" and getattr(res, "time", None) is not None
                        memo[h] = float(res.time) if ok else math.inf
                    dup = h in seen
                    seen.add(h)
                    if not dup:
                        values.append(memo[h])
                    v = memo[h]
                    tech.observe(Trial(config=c, config_hash=h, value=v, state="OK" if math.isfinite(v) else "FAILED",
                                       technique=tech.credit_name(h), duplicate=dup, evaluation=len(seen)))
            finite = [v for v in values if math.isfinite(v)]
            out["runs"].append({"technique": name, "seed": seed, "evaluations": len(values),
                                "best": min(finite) if finite else None, "values": values})
            print(f"stencil {name} seed {seed}: {len(values)} evaluations, best {min(finite) if finite else None}",
                  file=sys.stderr, flush=True)
            out["measured"] = len(memo)
            out["memo"] = {h: (v if math.isfinite(v) else None) for h, v in memo.items()}
            if args.json_out:
                Path(args.json_out).write_text(json.dumps(out, indent=1))
    return out


# ---------------------------------------------------------------------------
# a real application: the FPGA flow (yosys + nextpnr-ice40), recorded once
# ---------------------------------------------------------------------------

HLS_TABLE_FORMAT = "bench_doe.hls_table.v1"


def _hls_worker_init(design: str, scenario: str, trial_limit: float) -> None:
    from apps.hls_flags.evaluator import HlsEvaluator

    _HLS["ev"] = HlsEvaluator(design, scenario=scenario, timeout=trial_limit)


_HLS: dict[str, Any] = {}


def _hls_flow(config: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """One real flow run of ``config`` in a worker: (config, raw outcome)."""
    res = _HLS["ev"].flow(config)
    if res.failure is not None:
        return config, {"state": res.failure.state, "reason": res.failure.reason, "flow_s": res.seconds}
    return config, {"state": "OK", "metrics": res.metrics, "available": res.available, "flow_s": res.seconds}


def hls_table(args: argparse.Namespace) -> dict[str, Any]:
    """Measure a uniform sample of the FPGA flow's valid space once each, into a recorded table.

    The table (the default configuration first, then ``--samples`` valid
    configurations drawn with the space's own sampler from ``--seed``) is
    what ``replay`` searches afterwards: its configurations are the space, as
    for the recorded GPU spaces.  Measuring is resumable: configurations
    already in ``--out`` are not run again, so a cut run can be continued.
    The cost is Bruel's weighted normalized sum against the default's flow.
    """
    from apps.hls_flags.evaluator import HlsEvaluator
    from apps.hls_flags.flow import FlowResult, score_flow

    out_path = Path(args.out)
    ev = HlsEvaluator(args.design, scenario=args.scenario, timeout=args.trial_limit)
    space = ev.flags.to_search_space()
    default = ev.flags.default_config()
    table: dict[str, Any] = {"format": HLS_TABLE_FORMAT, "design": args.design, "scenario": args.scenario,
                             "names": list(space.names), "levels": {p.name: list(p.values()) for p in space.params},
                             "trial_limit": args.trial_limit, "rows": []}
    if out_path.exists():
        table = json.loads(out_path.read_text())
    table["command"] = "python -m scripts.bench_doe " + " ".join(sys.argv[1:])
    done = {space.config_hash(r["config"]) for r in table["rows"]}
    rng = np.random.default_rng(args.seed)
    todo: list[dict[str, Any]] = [default] + [dict(c) for c in space.sample(rng, args.samples)]
    todo = list({space.config_hash(c): c for c in todo if space.config_hash(c) not in done}.values())
    t_start = time.monotonic()
    base = ev.baseline()
    table["default_metrics"] = base.metrics

    def record(config: dict[str, Any], raw: dict[str, Any]) -> None:
        if raw["state"] == "OK":
            res = FlowResult(metrics=raw["metrics"], available=raw["available"], seconds=raw["flow_s"])
            cost = score_flow(res, base, args.scenario).metrics["cost"]
            table["rows"].append({"config": config, "state": "OK", "cost": cost, "flow_s": raw["flow_s"],
                                  "metrics": raw["metrics"]})
        else:
            table["rows"].append({"config": config, "state": raw["state"], "cost": None, "flow_s": raw["flow_s"],
                                  "reason": raw.get("reason")})
        ok = [r["cost"] for r in table["rows"] if r["cost"] is not None]
        print(f"hls {len(table['rows'])}: {raw['state']} flow {raw['flow_s']:.1f} s, best so far "
              f"{min(ok) if ok else None}", file=sys.stderr, flush=True)
        out_path.write_text(json.dumps(table, indent=None))

    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    with ctx.Pool(args.jobs, initializer=_hls_worker_init,
                  initargs=(args.design, args.scenario, args.trial_limit)) as pool:
        for config, raw in pool.imap_unordered(_hls_flow, todo):
            record(config, raw)
            if time.monotonic() - t_start > args.time_cap:
                print(f"hls: --time-cap {args.time_cap} s reached; rerun the command to continue", file=sys.stderr)
                pool.terminate()
                break
    ev.close()
    return table


def load_hls_table(path: str) -> Any:
    """A recorded FPGA-flow table as a RecordedSpace in file mode (the measured configurations are the space)."""
    from apps.replay.model import Record, RecordedSpace

    data = json.loads(Path(path).read_text())
    names = list(data["names"])
    records = {}
    for r in data["rows"]:
        key = tuple(r["config"][n] for n in names)
        if r["cost"] is None:
            records[key] = Record(value=None, state="FAILED", reason=r.get("reason") or r["state"], cost=r["flow_s"])
        else:
            records[key] = Record(value=float(r["cost"]), cost=float(r["flow_s"]))
    seen = {n: {k[i] for k in records} for i, n in enumerate(names)}
    values = {n: [v for v in data["levels"][n] if v in seen[n]] for n in names}
    return RecordedSpace(names=names, values=values, records=records, objective="cost", default_mode="file",
                         source=str(path), meta={"format": HLS_TABLE_FORMAT})


def _load(path: str) -> Any:
    """A recorded space: a replay file, or a table written by ``hls-table``."""
    if path.endswith(".json") and json.loads(Path(path).read_text()).get("format") == HLS_TABLE_FORMAT:
        return load_hls_table(path)
    from apps.replay import load_space

    return load_space(path)


def _hls_run_one(name: str, label: str, seed: int, budget: int) -> dict[str, Any]:
    """One tuner run on the real FPGA flow; every configuration measured once for the whole command."""
    from ensemble import registry
    from ensemble.technique import Trial

    ev, memo, space = _HLS["ev"], _HLS["memo"], _HLS["space"]
    tech = registry.create_technique(name, seed=seed)
    tech.bind(space, budget=budget, rng=np.random.default_rng(seed))
    values: list[float] = []
    seen: set[str] = set()
    measured_here = 0
    stall = 0
    while len(seen) < budget and not tech.done and stall < 2000:
        configs = tech.propose(1)
        if not configs:
            break
        for c in configs:
            h = space.config_hash(c)
            if h not in memo:
                res = ev.flow(c)
                cost = None if res.failure is not None else _HLS["score"](res)
                memo[h] = {"config": c, "state": "OK" if cost is not None else res.failure.state,
                           "cost": cost, "flow_s": res.seconds}
                measured_here += 1
            v = memo[h]["cost"]
            v = math.inf if v is None else float(v)
            dup = h in seen
            stall = stall + 1 if dup else 0
            seen.add(h)
            if not dup:
                values.append(v)
            tech.observe(Trial(config=c, config_hash=h, value=v, state="OK" if math.isfinite(v) else "FAILED",
                               technique=tech.credit_name(h), duplicate=dup, evaluation=len(seen)))
    finite = [v for v in values if math.isfinite(v)]
    return {"tuner": label, "seed": seed, "budget": budget, "evaluations": len(values),
            "best": min(finite) if finite else None, "measured_here": measured_here}


def _hls_pool_init(design: str, scenario: str, trial_limit: float, memo: Any, baseline: Any) -> None:
    from apps.hls_flags.evaluator import HlsEvaluator
    from apps.hls_flags.flow import score_flow

    ev = HlsEvaluator(design, scenario=scenario, timeout=trial_limit)
    ev._baseline = baseline
    _HLS.update(ev=ev, memo=memo, space=ev.flags.to_search_space(),
                score=lambda res: score_flow(res, baseline, scenario).metrics["cost"])



def _read_json(path: Path) -> Any:
    """A JSON file, gzip-compressed when its name ends in .gz (the FPGA cache: 7.6 MB as text, 1 MB packed)."""
    import gzip

    if path.suffix == ".gz":
        with gzip.open(path, "rt") as f:
            return json.load(f)
    return json.loads(path.read_text())


def _write_json(path: Path, data: Any) -> None:
    """Write ``data`` as JSON (gzip when the name ends in .gz) through a temporary file, so a kill keeps the old one."""
    import gzip
    import os

    tmp = path.with_name(path.name + ".tmp")
    if path.suffix == ".gz":
        with gzip.open(tmp, "wt") as f:
            json.dump(data, f)
    else:
        tmp.write_text(json.dumps(data))
    os.replace(tmp, path)

def hls(args: argparse.Namespace) -> dict[str, Any]:
    """DLMT, random search and the two ensembles on the real FPGA flow (yosys + nextpnr-ice40).

    Every distinct configuration any run proposes is measured once (a real
    flow run) and its cost kept in ``--cache``, a recorded table that later
    runs of the command replay instead of measuring again (the flow is
    deterministic for a configuration: nextpnr's seed is a tuned parameter).
    The cost is Bruel's weighted normalized sum against the default
    configuration (1.0 = the default; lower is better).
    """
    import multiprocessing

    from apps.hls_flags.evaluator import HlsEvaluator

    cache_path = Path(args.cache)
    cache: dict[str, Any] = {"format": "bench_doe.hls_cache.v1", "design": args.design, "scenario": args.scenario,
                             "entries": {}}
    if cache_path.exists():
        cache = _read_json(cache_path)
    ev = HlsEvaluator(args.design, scenario=args.scenario, timeout=args.trial_limit)
    space = ev.flags.to_search_space()
    baseline = ev.baseline()
    for extra in args.prefill:  # rows of an `hls-table` file: measured configurations
        for r in json.loads(Path(extra).read_text())["rows"]:
            cache["entries"].setdefault(space.config_hash(r["config"]), {k: r.get(k) for k in
                                                                         ("config", "state", "cost", "flow_s")})
    card_label, card = _design_card()
    tuners = [("DLMT", "dlmt"), ("random search", "Random"), ("default ensemble", "default"), (card_label, card)]
    tuners = [t for t in tuners if t[0].split(" ")[0].lower() in args.only or not args.only]
    out: dict[str, Any] = {"command": "python -m scripts.bench_doe " + " ".join(sys.argv[1:]),
                           "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()),
                           "app": f"hls_flags {args.design} {args.scenario} (yosys + nextpnr-ice40, up5k)",
                           "seeds": args.seeds, "budgets": args.budgets, "runs": []}
    manager = multiprocessing.Manager()
    memo = manager.dict(cache["entries"])
    before = len(memo)
    if args.json_out and Path(args.json_out).exists():  # a cut command continues: finished runs are kept
        out["runs"] = json.loads(Path(args.json_out).read_text())["runs"]
    finished = {(r["tuner"], r["seed"], r["budget"]) for r in out["runs"] if r.get("error") is None}
    tasks = [(name, label, args.seed + s, b) for b in args.budgets for s in range(args.seeds) for label, name in tuners
             if (label, args.seed + s, b) not in finished]
    if args.order == "seed":  # whole seeds first (every budget and tuner of seed s before seed s + 1)
        tasks.sort(key=lambda t: (t[2], args.budgets.index(t[3])))
    # every tuner's code imported before the fork: the workers run the code of the moment the command started
    import techniques.doe.report  # noqa: F401
    from ensemble import registry

    for _, name in tuners:
        if isinstance(name, str):
            registry.create_technique(name, seed=0)
    ctx = multiprocessing.get_context("fork")
    t0 = time.monotonic()
    with ctx.Pool(args.jobs, initializer=_hls_pool_init,
                  initargs=(args.design, args.scenario, args.trial_limit, memo, baseline)) as pool:
        rows = pool.imap_unordered(_hls_star, tasks)
        while True:
            left = None if args.time_cap is None else args.time_cap - (time.monotonic() - t0)
            try:
                if left is not None and left <= 0:
                    raise multiprocessing.TimeoutError
                row = rows.next(timeout=left)
            except StopIteration:
                break
            except multiprocessing.TimeoutError:
                # the runs still going are dropped, but every flow they finished is kept in the cache:
                # a later command (here or on another machine) replays those and measures only the rest
                out["cut"] = f"--time-cap {args.time_cap} s reached; unfinished runs dropped"
                print(f"hls: {out['cut']}", file=sys.stderr, flush=True)
                break
            key = (row["tuner"], row["seed"], row["budget"])  # a retried run replaces its earlier error
            out["runs"] = [r for r in out["runs"] if (r["tuner"], r["seed"], r["budget"]) != key] + [row]
            out["measured"] = len(memo) - before
            out["seconds"] = time.monotonic() - t0
            print(f"hls {row['tuner']:40s} seed {row['seed']} budget {row['budget']}: best {row['best']} "
                  f"({row['evaluations']} evaluations, {row['measured_here']} measured)", file=sys.stderr, flush=True)
            cache["entries"] = dict(memo)
            _write_json(cache_path, cache)
            if args.json_out:
                Path(args.json_out).write_text(json.dumps(out, indent=1))
        cache["entries"] = dict(memo)  # flows of runs cut by the time cap too
        _write_json(cache_path, cache)
        out["measured"] = len(memo) - before
        out["seconds"] = time.monotonic() - t0
        if args.json_out:
            Path(args.json_out).write_text(json.dumps(out, indent=1))
        pool.terminate()
    ev.close()
    return out


def _hls_star(task: tuple[Any, ...]) -> dict[str, Any]:
    """One run; a tuner that raises is recorded with its error (the other runs go on)."""
    try:
        return _hls_run_one(*task)
    except Exception as exc:  # noqa: BLE001 - a benchmark row, not a crash of the whole table
        _, label, seed, budget = task
        return {"tuner": label, "seed": seed, "budget": budget, "evaluations": None, "best": None,
                "measured_here": None, "error": f"{type(exc).__name__}: {exc}"}


def main(argv: Sequence[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.bench_doe", description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="part")
    r = sub.add_parser("replay", help="DLMT vs random, default and design-card ensembles on the replay spaces")
    r.add_argument("spaces", nargs="*", default=DEFAULT_SPACES)
    r.add_argument("--seeds", type=int, default=25)
    r.add_argument("--seed", type=int, default=0, help="first seed; run s uses seed + s")
    r.add_argument("--budgets", type=lambda s: [int(x) for x in s.split(",")], default=[25, 56, 125])
    r.add_argument("--only", type=lambda s: [x.lower() for x in s.split(",") if x], default=[],
                   help="first words of the tuner labels to run (dlmt,random,default,cstuner-ensemble)")
    r.add_argument("--dlmt-variant", action="append", default=[], metavar="LABEL=JSON",
                   help="also run DLMT with these options, e.g. 'stop={\"rest\": \"stop\"}' (repeatable)")
    r.add_argument("--jobs", type=int, default=1)
    r.add_argument("--json-out", default=None)
    r.add_argument("--markdown", default=None)
    d = sub.add_parser("designs", help="D-criterion vs candidate-set size and strategy (appendix F in spirit)")
    d.add_argument("--factors", type=int, default=20, help="factors (Table 2 used 60)")
    d.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[100, 250, 1000])
    d.add_argument("--repeats", type=int, default=5)
    d.add_argument("--json-out", default=None)
    e = sub.add_parser("explain", help="DLMT's decisions per space (steps, empty screens, levels fixed at the optimum)")
    e.add_argument("spaces", nargs="*", default=DEFAULT_SPACES)
    e.add_argument("--budget", type=int, default=56)
    e.add_argument("--seeds", type=int, default=25)
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--options", default="{}", help="DLMT options as JSON (default: DLMT's defaults)")
    e.add_argument("--json-out", default=None)
    s = sub.add_parser("stencil", help="DLMT and random search on the OpenCL stencil app (each config measured once)")
    s.add_argument("--pattern", default="star")
    s.add_argument("--dims", type=int, default=2)
    s.add_argument("--size", type=int, default=256)
    s.add_argument("--budget", type=int, default=25)
    s.add_argument("--seeds", type=int, default=2)
    s.add_argument("--trial-limit", type=float, default=30.0)
    s.add_argument("--techniques", type=lambda v: [x for x in v.split(",") if x], default=["dlmt", "Random"])
    s.add_argument("--memo", default=None, help="JSON written by an earlier run: reuse its measurements")
    s.add_argument("--json-out", default=None)
    h = sub.add_parser("hls-table", help="measure a uniform sample of the FPGA flow's space once each (a recorded table)")
    h.add_argument("--design", default="crc32")
    h.add_argument("--scenario", default="balanced")
    h.add_argument("--samples", type=int, default=300, help="valid configurations drawn besides the default")
    h.add_argument("--seed", type=int, default=0)
    h.add_argument("--jobs", type=int, default=2)
    h.add_argument("--trial-limit", type=float, default=120.0, help="seconds per flow (beyond: TIMEOUT, recorded)")
    h.add_argument("--time-cap", type=float, default=3000.0, help="stop measuring after this many seconds")
    h.add_argument("--out", default="docs/doe_results/hls_crc32_balanced.json")
    g = sub.add_parser("hls", help="DLMT vs random and the ensembles on the real FPGA flow (each configuration measured once)")
    g.add_argument("--design", default="crc32")
    g.add_argument("--scenario", default="balanced")
    g.add_argument("--seeds", type=int, default=1)
    g.add_argument("--seed", type=int, default=0)
    g.add_argument("--budgets", type=lambda s: [int(x) for x in s.split(",")], default=[25, 56])
    g.add_argument("--only", type=lambda s: [x.lower() for x in s.split(",") if x], default=[])
    g.add_argument("--jobs", type=int, default=2)
    g.add_argument("--trial-limit", type=float, default=120.0)
    g.add_argument("--cache", default="docs/doe_results/hls_crc32_balanced_cache.json.gz",
                   help="the flows' recorded costs (.json or .json.gz), read first and written as runs end")
    g.add_argument("--prefill", action="append", default=[], help="an hls-table file whose rows join the cache")
    g.add_argument("--json-out", default=None)
    g.add_argument("--time-cap", type=float, default=None,
                   help="stop after this many seconds: finished runs and every flow measured so far are kept")
    g.add_argument("--order", choices=("budget", "seed"), default="budget",
                   help="budget: every seed of a budget before the next budget; seed: whole seeds first "
                        "(budgets in the order given), so a cut command leaves complete seeds")
    args = p.parse_args(argv)
    parts = {"hls": hls, "hls-table": hls_table, "stencil": stencil, "explain": explain, "designs": designs}
    if args.part in parts:
        parts[args.part](args)
        return 0
    if args.part is None:
        args = p.parse_args(["replay", *(argv or sys.argv[1:])])
    report = replay(args)
    table = replay_markdown(report)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
