"""Search quality on replayed real spaces, after Willemsen et al. (FGCS 2024).

Method ("A methodology for comparing optimization algorithms for auto-tuning",
B. van Werkhoven, F.-J. Willemsen et al., Future Generation Computer Systems
2024; the parameters below are the defaults of the paper's companion package,
AutoTuningAssociation/autotuning_methodology):

* Random search baseline R(k): the EXACT expected best of k draws without
  replacement from all configurations of the space (valid and failed), from
  order statistics, not simulation. Failed configurations rank last; a run
  that has seen only failures counts as holding the worst valid value (the
  same convention is applied to every tuner's trace).
* Budget: the cutoff point. With f_opt the optimum and m the median of the
  valid values, the target is f_opt + (m - f_opt)(1 - p); the budget B is the
  smallest k with R(k) <= target for p = 0.95 (``--cutoff``), and the score
  axis starts at k0, the same rule with p = 0.01 (``--cutoff-start``).
* Score: P(k) = (S(k) - R(k)) / (f_opt - R(k)) with S(k) the mean over repeats
  of the best value after k unique evaluations; the space's score is the mean
  of P over k = k0..B. 0 = random search, 1 = the optimum from the start.

* ``--score-scale file`` (with ``--space grid``): the tuner searches the
  grid, failures charged, but budget, axis, optimum and baseline are the
  file mode's, so a grid run and a file run are scored on one scale.

Every tuner gets the same space mode and budget, counted in unique
evaluations; how each peer's duplicates are counted is in docs/BENCHMARKS.md.
Our techniques run through the real search driver on the in-memory store
(``memory://``; duplicates answered from the store, not counted), each
evaluation charged its recorded cost (the default ensemble's model retirement
is switched off unless ``--model-retirement on``; see docs/TECHNIQUES.md);
OpenTuner 0.8.8 and Kernel Tuner 1.5.0 run in their own venvs (scripts/_peers).

    python -m scripts.bench_search --repeats 25 --markdown docs/bench_search_table.md
"""

from __future__ import annotations

import argparse
import json
import math
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from apps.replay import RecordedSpace, load_space

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SPACES = sorted(str(p) for p in (ROOT.parent / "shared" / "data" / "spaces").glob("*.json.gz"))
BASE_TECHNIQUES = ("Random", "NelderMead", "Torczon", "SimulatedAnnealing", "DifferentialEvolution",
                   "GreedyMutation", "NormalGreedyMutation", "PatternSearch", "GA", "PSO")
KT_STRATEGIES = ("genetic_algorithm", "pso", "dual_annealing", "pyatf_auc_bandit")

# --------------------------------------------------------------------------
# The methodology: exact random-search expectation, cutoff budget, score
# --------------------------------------------------------------------------


def ranked_values(scalars: np.ndarray) -> np.ndarray:
    """All values sorted ascending, failures (inf) replaced by the worst valid value."""
    finite = scalars[np.isfinite(scalars)]
    if finite.size == 0:
        raise ValueError("scalars: no valid configuration in the space; nothing to score")
    return np.sort(np.where(np.isfinite(scalars), scalars, finite.max()))


def random_expectation(scalars: np.ndarray, ks: Sequence[int]) -> np.ndarray:
    """E[min of k draws without replacement] for each k, exactly.

    With the N values sorted v_1 <= ... <= v_N, P(best rank >= i) =
    C(N-i+1, k) / C(N, k); successive ratios are (N-i+1-k)/(N-i+1), so the
    survival function is a cumulative product and E = sum_i v_i P(rank = i).
    """
    v = ranked_values(np.asarray(scalars, dtype=float))
    n = v.size
    i = np.arange(1, n + 1)
    out = np.empty(len(ks))
    for j, k in enumerate(ks):
        if not 1 <= k <= n:
            raise ValueError(f"ks: draws k={k} outside 1..{n} (the space size)")
        ratio = np.clip((n - i + 1 - k) / (n - i + 1), 0.0, 1.0)
        surv = np.concatenate(([1.0], np.cumprod(ratio)))  # surv[i-1] = P(rank >= i)
        out[j] = float(np.dot(v, surv[:-1] - surv[1:]))
    return out


def cutoff_evaluations(scalars: np.ndarray, fraction: float) -> int:
    """Smallest k at which random search's expected best is ``fraction`` of the way
    from the median (of valid values) to the optimum."""
    finite = scalars[np.isfinite(scalars)]
    f_opt, median = float(finite.min()), float(np.median(finite))
    target = f_opt + (median - f_opt) * (1.0 - fraction)
    n = scalars.size
    lo, hi = 1, n  # R is non-increasing in k: bisect
    while lo < hi:
        mid = (lo + hi) // 2
        if random_expectation(scalars, [mid])[0] <= target + 1e-12 * abs(target):
            hi = mid
        else:
            lo = mid + 1
    return lo


@dataclass
class Methodology:
    """Per-space baseline, budget window and scoring."""

    scalars: np.ndarray
    cutoff: float = 0.95
    cutoff_start: float = 0.01
    k0: int = field(init=False)
    budget: int = field(init=False)
    f_opt: float = field(init=False)
    worst: float = field(init=False)
    baseline: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        finite = self.scalars[np.isfinite(self.scalars)]
        self.f_opt, self.worst = float(finite.min()), float(finite.max())
        self.budget = cutoff_evaluations(self.scalars, self.cutoff)
        self.k0 = min(cutoff_evaluations(self.scalars, self.cutoff_start), self.budget)
        self.baseline = random_expectation(self.scalars, range(1, self.budget + 1))

    def trace(self, values: Sequence[float]) -> np.ndarray:
        """Best-so-far after each of the first ``budget`` unique evaluations.

        Failures count as the worst valid value until something valid is seen;
        a tuner that stopped early keeps its best for the rest of the axis.
        """
        vals = np.asarray(list(values)[: self.budget], dtype=float)
        vals = np.where(np.isfinite(vals), vals, self.worst)
        best = np.minimum.accumulate(vals) if vals.size else np.array([self.worst])
        if best.size < self.budget:
            best = np.concatenate([best, np.full(self.budget - best.size, best[-1])])
        return best

    def scores(self, traces: np.ndarray) -> np.ndarray:
        """Per-repeat scores; their mean is the score of the mean curve (P is linear in S)."""
        r = self.baseline[self.k0 - 1:]
        s = traces[:, self.k0 - 1:]
        denom = self.f_opt - r
        ok = np.abs(denom) > 1e-12 * max(1.0, abs(self.f_opt))
        if not ok.any():
            return np.zeros(traces.shape[0])
        return ((s[:, ok] - r[ok]) / denom[ok]).mean(axis=1)


# --------------------------------------------------------------------------
# Runners: each returns, per repeat, the objective scalars of its unique
# evaluations in order (math.inf for failures).
# --------------------------------------------------------------------------

Runner = Callable[[RecordedSpace, str, int, int], list[float]]


def _lookup_scalar(space: RecordedSpace, key: tuple[Any, ...]) -> float:
    rec = space.records.get(key)
    return math.inf if rec is None else space.scalar(rec)


def run_reference_random(space: RecordedSpace, mode: str, budget: int, seed: int) -> list[float]:
    """Random search without replacement, written here as the methodology's own check."""
    keys = list(space.keys(mode))
    order = np.random.default_rng(seed).permutation(len(keys))[:budget]
    return [_lookup_scalar(space, keys[i]) for i in order]


class RunValues(list):
    """Values of one run; ``cut`` is True when the run hit the wall-clock guard."""

    cut = False


class _ReplayFunction:
    """The replayed space as an app: each evaluation returns its recorded value and is charged its recorded cost."""

    def __init__(self, space: RecordedSpace, mode: str) -> None:
        self._space, self._mode = space, mode
        self._search_space = space.to_search_space(mode)
        self.argv: list[str] = []

    def space(self) -> Any:
        return self._search_space

    def objective(self) -> Any:
        from ensemble.objective import Minimize

        return Minimize("scalar")   # the minimiser's number: negated for a maximised space

    def seed_configurations(self) -> list[dict[str, Any]]:
        return []

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        from ensemble.result import Result

        rec = self._space.lookup(config)
        value = math.inf if rec is None else self._space.scalar(rec)
        cost = 0.0 if rec is None else float(rec.cost)
        if not math.isfinite(value):
            return Result(state="FAILED", reason=(rec.reason if rec is not None else None) or "failed", cost=cost)
        return Result(metrics={"scalar": value}, cost=cost)


def run_technique(name: str, space: RecordedSpace, mode: str, budget: int, seed: int,
                  *, max_stall: int = 2000, max_seconds: float | None = None) -> list[float]:
    """Run one of our techniques through the real search driver on the in-memory store.

    An ordinary run (``RunSession``, same-thread loop, ``memory://``, one
    worker): a configuration already evaluated is answered from the store as
    a duplicate and does not count; the run ends at ``budget`` unique
    evaluations, when the technique is done, or after ``max_stall`` proposals
    in a row that brought nothing new (the technique is then told it has
    nothing more to propose). ``max_seconds`` is the run's ``stop_after``: a
    run stopped by it keeps its best for the rest of the axis and is
    reported as cut.  Values are returned in evaluation order.
    """
    from ensemble import registry
    from ensemble.driver import RunSession
    from ensemble.settings import RunSettings
    from ensemble.storage import open_storage

    app = _ReplayFunction(space, mode)
    if ":" in name and name not in registry.technique_names():  # "module:attr", as the driver accepts
        tech = registry.resolve(name)(seed=seed)
    else:
        tech = registry.create_technique(name, seed=seed)
    _stall_guard(tech, app.space(), max_stall)
    limit = min(budget, space.size(mode))
    settings = RunSettings(database="memory://", test_limit=limit, seed=seed, quiet=True, stop_after=max_seconds,
                           run_name="bench")
    store = open_storage("memory://")
    session = RunSession(app, settings, app_ref="scripts.bench_search:run_technique", technique=tech, storage=store)
    result = session.run()
    out = RunValues()
    for row in store.trials(session.run_id):
        if row.duplicate or str(row.state) in ("WAITING", "RUNNING"):
            continue
        out.append(math.inf if str(row.state) != "OK" or row.value is None else float(row.value))
    out.cut = bool(result.stop_reason and result.stop_reason.startswith("time limit"))
    store.close()
    return out


def run_technique_workers(name: str, space: RecordedSpace, mode: str, budget: int, seed: int, workers: int,
                          *, max_stall: int = 2000) -> list[float]:
    """One of our techniques with ``workers`` simulated asynchronous workers (issue 18, point 3).

    Through the ask/tell :class:`ensemble.Tuner` on ``memory://``: ``workers``
    configurations are in flight at once; each takes its recorded cost in
    simulated time (failures their recorded cost, unrecorded ones a tenth of
    the space's median cost, so that they return first as a refused build
    would), and the technique is told the result that finishes first and
    asked to refill that slot, so it proposes without the results still
    being measured, as under ``mpirun -n workers``.  Values are returned in
    the order the results arrive.
    """
    import heapq

    from ensemble import Tuner, registry
    from ensemble.errors import EnsembleError

    if ":" in name and name not in registry.technique_names():
        tech = registry.resolve(name)(seed=seed)
    else:
        tech = registry.create_technique(name, seed=seed)
    app = _ReplayFunction(space, mode)
    _stall_guard(tech, app.space(), max_stall)
    costs = [float(r.cost) for r in space.records.values() if r.cost and math.isfinite(float(r.cost))]
    refused = 0.1 * float(np.median(costs)) if costs else 0.0
    limit = min(budget, space.size(mode))
    tuner = Tuner(app.space(), objective=app.objective(), database="memory://", test_limit=limit, seed=seed,
                  quiet=True, run_name="bench", technique=tech)
    flight: list[tuple[float, int, dict[str, Any]]] = []
    now, order, out = 0.0, 0, RunValues()
    try:
        while len(out) < limit:
            while len(flight) < workers and not tuner.done:
                try:
                    config = tuner.ask()
                except EnsembleError:
                    break
                rec = space.lookup(config)
                cost = refused if rec is None or not rec.cost else float(rec.cost)
                heapq.heappush(flight, (now + cost, order, config))
                order += 1
            if not flight:
                break
            now, _, config = heapq.heappop(flight)
            rec = space.lookup(config)
            value = math.inf if rec is None else space.scalar(rec)
            tuner.tell(config, app.run(config, None))
            out.append(value)
    finally:
        tuner.close()
    return out


def _stall_guard(tech: Any, sspace: Any, max_stall: int) -> None:
    """Make ``tech`` propose nothing after ``max_stall`` proposals in a row that were all seen before."""
    propose = tech.propose
    seen: set[str] = set()
    stall = [0]

    def guarded(n: int) -> list[dict[str, Any]]:
        if stall[0] >= max_stall:
            return []
        out = propose(n)
        hashes = [sspace.config_hash(c) for c in out]
        if hashes and all(h in seen for h in hashes):
            stall[0] += len(hashes)
        elif hashes:
            stall[0] = 0
        seen.update(hashes)
        return out

    tech.propose = guarded


def _run_technique_args(name: str, space: RecordedSpace, mode: str, budget: int, seed: int,
                        max_stall: int, max_seconds: float | None, workers: int = 1) -> list[float]:
    if workers > 1:
        return run_technique_workers(name, space, mode, budget, seed, workers, max_stall=max_stall)
    return run_technique(name, space, mode, budget, seed, max_stall=max_stall, max_seconds=max_seconds)


def _peer_rows(prefix: str, fut: Any) -> dict[str, list[list[float]]]:
    return {f"{prefix} {k}": v for k, v in fut.result().items()}


def technique_label(name: str) -> str:
    """The registry name of a technique given as "module:attr" (its class's ``name``)."""
    if ":" not in name:
        return name
    from ensemble import registry

    try:
        return str(getattr(registry.resolve(name), "name", name))
    except Exception:  # noqa: BLE001 - a label must never fail; the run reports the real error
        return name


def _map(jobs: int, fn: Callable[..., Any], arglists: list[tuple[Any, ...]]) -> list[Any]:
    """fn over the argument tuples, in order; over ``jobs`` forked processes when jobs > 1."""
    if jobs <= 1:
        return [fn(*a) for a in arglists]
    import multiprocessing

    with multiprocessing.get_context("fork").Pool(jobs) as pool:
        return pool.starmap(fn, arglists)


def peer_input(space: RecordedSpace, mode: str, budget: int, seeds: Sequence[int],
               strategies: Sequence[str]) -> dict[str, Any]:
    """What a peer script needs: parameters, the replay table in the space mode, budget, seeds."""
    table = [[list(k), space.records[k].value if k in space.records and not space.records[k].failed else None,
              space.records[k].cost if k in space.records else 0.0]
             for k in space.keys(mode)]
    return {"names": space.names, "values": space.values, "maximize": space.maximize, "mode": mode,
            "table": table, "budget": budget, "seeds": list(seeds), "strategies": list(strategies),
            "meta": space.meta}


def run_peer_batch(peer: str, script: str, payload: dict[str, Any], space: RecordedSpace,
                   timeout: float) -> dict[str, list[list[float]]]:
    """Run a peer script once for all seeds/strategies; map its configs back to our lookup.

    A peer that runs past ``timeout`` is killed; the seeds it finished (a
    peer script that supports it writes each to ``payload["progress"]``, a
    folder) are kept, in seed order, under the label
    ``"<strategy> (k of n seeds, time limit)"`` so that the table shows they
    are partial; with none finished the timeout propagates as before.
    """
    from scripts._peers import run_peer

    progress = tempfile.mkdtemp(prefix="peer_progress_")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as fh:
        json.dump({**payload, "progress": progress}, fh)
        path = fh.name
    try:
        try:
            out = run_peer(peer, ROOT / "scripts" / script, [path], timeout=timeout)
        except subprocess.TimeoutExpired:
            out = _partial_peer_runs(progress, payload)
            if not out["runs"]:
                raise
            for label in out["runs"]:
                print(f"  {peer}:{label}: kept the seeds finished before the {timeout:.0f} s limit", file=sys.stderr)
    finally:
        Path(path).unlink(missing_ok=True)
        shutil.rmtree(progress, ignore_errors=True)
    result: dict[str, list[list[float]]] = {}
    for strategy, runs in out["runs"].items():
        result[strategy] = [[_lookup_scalar(space, tuple(c)) for c in run] for run in runs]
    for strategy, err in out.get("errors", {}).items():
        print(f"  {peer}:{strategy}: {err}", file=sys.stderr)
    return result


def _partial_peer_runs(progress: str, payload: dict[str, Any]) -> dict[str, Any]:
    """The seeds a killed peer finished, from its progress folder: {"runs": {label: [configs per seed]}}."""
    done: dict[str, dict[int, list[Any]]] = {}
    for f in sorted(Path(progress).glob("*.json")):
        try:
            rec = json.loads(f.read_text())
        except (OSError, ValueError):
            continue  # a file caught mid-write (the peer writes .tmp then renames, so not expected)
        done.setdefault(rec["strategy"], {})[int(rec["seed"])] = rec["configs"]
    n = len(payload.get("seeds", []))
    runs = {f"{strategy} ({len(by_seed)} of {n} seeds, time limit)": [by_seed[s] for s in sorted(by_seed)]
            for strategy, by_seed in done.items() if by_seed}
    return {"runs": runs, "errors": {}}


# --------------------------------------------------------------------------
# The benchmark
# --------------------------------------------------------------------------


def space_name(path: str) -> str:
    return Path(path).name.split(".")[0]


def evaluate_space(path: str, args: argparse.Namespace) -> dict[str, Any]:
    space = load_space(path)
    mode = space.check_mode(args.space)
    scale = mode if args.score_scale == "mode" else args.score_scale
    meth = Methodology(space.scalars(scale), cutoff=args.cutoff, cutoff_start=args.cutoff_start)
    seeds = [args.seed + r for r in range(args.repeats)]
    print(f"{space_name(path)}: mode {mode}, size {space.size(mode)}, budget {meth.budget} "
          f"(axis from {meth.k0}), optimum {meth.f_opt:.6g}"
          + (f", scored on the {scale} mode's scale" if scale != mode else ""), file=sys.stderr)
    runs: dict[str, list[list[float]]] = {}
    timing: dict[str, float] = {}

    def timed(label: str, fn: Callable[[], Any]) -> None:
        t0 = time.perf_counter()
        try:
            res = fn()
        except Exception as exc:  # noqa: BLE001 - a missing technique or peer must not sink the table
            print(f"  {label}: skipped ({type(exc).__name__}: {str(exc)[:300]})", file=sys.stderr)
            return
        timing[label] = time.perf_counter() - t0
        if isinstance(res, dict):
            runs.update(res)
        else:
            runs[label] = res

    # peers run as subprocesses in background threads while our techniques run here
    from concurrent.futures import ThreadPoolExecutor

    pool = ThreadPoolExecutor(max_workers=2)
    futures: dict[str, tuple[Any, float]] = {}
    if "opentuner" in args.peers:
        payload = peer_input(space, mode, meth.budget, seeds, ["AUCBanditMetaTechniqueA"])
        payload["jobs"] = args.peer_jobs
        futures["OpenTuner 0.8.8"] = (pool.submit(run_peer_batch, "opentuner", "_bench_search_opentuner.py",
                                                  payload, space, args.peer_timeout), time.perf_counter())
    if "kerneltuner" in args.peers:
        payload = peer_input(space, mode, meth.budget, seeds, args.kt_strategies)
        payload["jobs"] = args.peer_jobs
        futures["Kernel Tuner 1.5"] = (pool.submit(run_peer_batch, "kerneltuner", "_bench_search_kerneltuner.py",
                                                   payload, space, args.peer_timeout), time.perf_counter())
    rseeds = [args.seed + r for r in range(max(args.repeats, args.random_repeats))]
    timed(f"random search (check, {len(rseeds)} repeats)",
          lambda: [run_reference_random(space, mode, meth.budget, s) for s in rseeds])
    for name in args.techniques:
        for w in args.workers:
            jobs = [(name, space, mode, meth.budget, s, 2000, args.run_timeout, w) for s in seeds]
            label = technique_label(name) + (f" ({w} workers)" if w > 1 else "")
            timed(label, partial(_map, args.jobs, _run_technique_args, jobs))
    for prefix, (fut, started) in futures.items():
        timed(prefix, partial(_peer_rows, prefix, fut))
        timing[prefix] = time.perf_counter() - started  # wall time since launch (ran concurrently)
    pool.shutdown()
    table: dict[str, Any] = {}
    for label, per_seed in runs.items():
        traces = np.array([meth.trace(v) for v in per_seed])
        sc = meth.scores(traces)
        table[label] = {"score": float(sc.mean()), "sem": float(sc.std(ddof=1) / math.sqrt(len(sc))) if len(sc) > 1 else 0.0,
                        "repeats": len(sc), "cut_runs": sum(bool(getattr(v, "cut", False)) for v in per_seed), "unique_evals": float(np.mean([min(len(v), meth.budget) for v in per_seed])),
                        "final_best_over_opt": float(traces[:, -1].mean() / meth.f_opt) if meth.f_opt else None,
                        # per repeat, in seed order: two tuners run with the same seeds can be compared pairwise
                        "per_seed_scores": [round(float(x), 4) for x in sc],
                        **failure_fractions(per_seed, meth.budget)}
        print(f"  {label:40s} score {table[label]['score']:+.3f} ± {table[label]['sem']:.3f}", file=sys.stderr)
    return {"space": space_name(path), "mode": mode, "score_scale": scale, "size": space.size(mode), "budget": meth.budget,
            "k0": meth.k0, "optimum": meth.f_opt, "results": table, "seconds": timing}


def failure_fractions(per_seed: Sequence[Sequence[float]], budget: int) -> dict[str, float]:
    """Share of the budget's evaluations that failed (inf), over the whole run and after its first 20 %.

    Why both: a search that learns where configurations fail pays for the
    first failures; what matters after that is whether it keeps paying.
    """
    whole, late = [], []
    for values in per_seed:
        v = np.asarray(list(values)[:budget], dtype=float)
        if len(v) == 0:
            continue
        failed = ~np.isfinite(v)
        whole.append(failed.mean())
        start = math.ceil(0.2 * len(v))
        if len(v) > start:
            late.append(failed[start:].mean())
    return {"failure_fraction": float(np.mean(whole)) if whole else 0.0,
            "failure_fraction_after_20pct": float(np.mean(late)) if late else 0.0}


def markdown(report: dict[str, Any]) -> str:
    spaces = [r["space"] for r in report["spaces"]]
    labels: list[str] = []
    for r in report["spaces"]:
        labels += [lab for lab in r["results"] if lab not in labels]
    lines = ["| tuner | " + " | ".join(spaces) + " | mean |", "|---" * (len(spaces) + 2) + "|"]
    lines.insert(1, "| budget (unique evals) | " + " | ".join(str(r["budget"]) for r in report["spaces"]) + " | |")
    lines[1], lines[2] = lines[2], lines[1]
    rescaled = [f"{r['space']} ({r['mode']} searched)" for r in report["spaces"] if r.get("score_scale", r["mode"]) != r["mode"]]
    if rescaled:
        lines = [f"Scored on the file mode's scale (its budget, axis and random baseline): {', '.join(rescaled)}", "",
                 *lines]
    for lab in labels:
        cells = [r["results"].get(lab, {}).get("score") for r in report["spaces"]]
        vals = [c for c in cells if c is not None]
        mean = f"**{np.mean(vals):.3f}**" if len(vals) == len(cells) else "n/a"
        lines.append(f"| {lab} | " + " | ".join("-" if c is None else f"{c:.3f}" for c in cells) + f" | {mean} |")
    lines += ["", "Mean unique evaluations used (of the budget):", "",
              "| tuner | " + " | ".join(spaces) + " |", "|---" * (len(spaces) + 1) + "|"]
    for lab in labels:
        cells = [r["results"].get(lab, {}).get("unique_evals") for r in report["spaces"]]
        cuts = [r["results"].get(lab, {}).get("cut_runs", 0) for r in report["spaces"]]
        lines.append(f"| {lab} | " + " | ".join("-" if c is None else f"{c:.0f}" + (f" ({k} cut)" if k else "")
                                                for c, k in zip(cells, cuts)) + " |")
    lines += ["", "Share of the evaluations that failed (whole run / after the first 20 % of it):", "",
              "| tuner | " + " | ".join(spaces) + " |", "|---" * (len(spaces) + 1) + "|"]
    for lab in labels:
        res = [r["results"].get(lab) for r in report["spaces"]]
        lines.append(f"| {lab} | " + " | ".join(
            "-" if x is None or "failure_fraction" not in x
            else f"{x['failure_fraction']:.2f} / {x['failure_fraction_after_20pct']:.2f}" for x in res) + " |")
    return "\n".join(lines) + "\n"


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m scripts.bench_search", description=__doc__.split("\n\n")[0])
    p.add_argument("spaces", nargs="*", default=DEFAULT_SPACES, help="recorded space files (default: shared/data/spaces)")
    p.add_argument("--space", choices=("file", "grid"), default=None, help="space mode for every tuner (default: the file's)")
    p.add_argument("--repeats", type=int, default=25)
    p.add_argument("--random-repeats", type=int, default=1000,
                   help="repeats of the reference random search (cheap; its score must be ~0)")
    p.add_argument("--seed", type=int, default=1000, help="first seed; repeat r uses seed + r")
    p.add_argument("--score-scale", choices=("mode", "file"), default="mode",
                   help="whose methodology scores the runs: the searched mode's own (budget, axis and random "
                        "baseline of --space), or 'file': the tuner searches --space (e.g. the grid, failures "
                        "charged) but gets the file mode's budget and is scored against the file mode's random "
                        "baseline, so the two modes' scores are on one scale (what not knowing the "
                        "constraints costs at the same budget)")
    p.add_argument("--cutoff", type=float, default=0.95)
    p.add_argument("--cutoff-start", type=float, default=0.01)
    p.add_argument("--techniques", type=lambda s: [t for t in s.split(",") if t], default=["default", *BASE_TECHNIQUES])
    p.add_argument("--peers", type=lambda s: [t for t in s.split(",") if t], default=["opentuner", "kerneltuner"])
    p.add_argument("--kt-strategies", type=lambda s: s.split(","), default=list(KT_STRATEGIES))
    p.add_argument("--jobs", type=int, default=1, help="processes for our techniques' independent seeds")
    p.add_argument("--workers", type=lambda s: [int(w) for w in s.split(",") if w], default=[1],
                   help="simulated asynchronous workers for our techniques, e.g. 1,8: each evaluation takes its "
                        "recorded cost in simulated time and the technique proposes while the others measure "
                        "(1: the ordinary sequential run)")
    p.add_argument("--run-timeout", type=float, default=None, metavar="SEC",
                   help="guard: cut one of our runs after SEC wall seconds (reported as cut)")
    p.add_argument("--peer-jobs", type=int, default=2,
                   help="processes for the peers' independent runs (OpenTuner's seeds; Kernel Tuner's strategies "
                        "and seeds)")
    p.add_argument("--peer-timeout", type=float, default=1800.0)
    p.add_argument("--model-retirement", choices=("off", "on"), default="off",
                   help="let the default ensemble's model retire when its compute outweighs the recorded "
                        "cost (timed, so machine-dependent; off: as every earlier table of this benchmark)")
    p.add_argument("--json-out", default=None)
    p.add_argument("--markdown", default=None, help="write the score table here")
    return p


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.model_retirement == "off":
        import techniques.default

        techniques.default.MODEL_COMPUTE_SHARE = None   # as the earlier in-memory loop (it charged no cost)
    t0 = time.perf_counter()
    report = {"command": "python -m scripts.bench_search " + " ".join(sys.argv[1:] if argv is None else argv),
              "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "repeats": args.repeats,
              "cutoff": args.cutoff, "cutoff_start": args.cutoff_start,
              "spaces": []}
    for path in args.spaces:
        report["spaces"].append(evaluate_space(path, args))
        if args.json_out:  # keep partial results of a long run
            Path(args.json_out).write_text(json.dumps(report, indent=1))
    report["wall_seconds"] = time.perf_counter() - t0
    table = markdown(report)
    print(table)
    if args.markdown:
        Path(args.markdown).write_text(table)
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(report, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
