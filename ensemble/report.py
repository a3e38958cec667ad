"""Write a run's report: best.json, trials.csv, techniques.csv, convergence.png.

Why these files: they are the public, stable output of a run (docs/REPORTS.md
describes every key and column); scripts and notebooks read them without
knowing the database schema. Everything is computed from ``storage.trials``,
so a report can be written for any run in any database, finished or not.
"""

from __future__ import annotations

import csv
import json
import math
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ensemble.result import TrialState

if TYPE_CHECKING:  # pragma: no cover
    from ensemble.storage.base import BaseStorage

__all__ = ["REPORT_FILES", "best_summary", "write_report"]

REPORT_FILES = ("best.json", "trials.csv", "techniques.csv", "convergence.png")
_FIXED = ["number", "state", "technique", "value", "cost", "duplicate", "elapsed_s", "reason"]


def _objective_for(storage: BaseStorage, run_id: int) -> Any:
    """The run's objective rebuilt from objective_json, or None."""
    try:
        from ensemble import objective as objmod

        record = next((r for r in storage.list_runs() if int(r.id) == int(run_id)), None)
        if record is None:
            return None
        loader = getattr(objmod, "objective_from_json", None) or getattr(objmod, "from_json", None)
        return loader(json.loads(record.objective_json)) if loader else None
    except Exception:  # noqa: BLE001 - the ranking scalar is a correct fallback
        return None


def _user_value(objective: Any, row: Any) -> float | None:
    if row.state != TrialState.OK or row.value is None:
        return None
    if objective is not None:
        try:
            from ensemble.result import Result

            metrics = dict(row.metrics or {})
            return float(objective.value(Result(time=metrics.get("time"), metrics=metrics)))
        except Exception:  # noqa: BLE001, S110 - the ranking scalar is the fallback
            pass
    return float(row.value)


def _finished(rows: Sequence[Any]) -> list[Any]:
    done = [r for r in rows if r.state not in (TrialState.WAITING, TrialState.RUNNING)]
    return sorted(done, key=lambda r: (r.finished_at is None, r.finished_at or 0, r.request_id))


def best_summary(storage: BaseStorage, run_id: int, objective: Any = None) -> dict[str, Any] | None:
    """The content of best.json, or None when nothing finished OK."""
    if objective is None:
        objective = _objective_for(storage, run_id)
    rows = storage.trials(run_id)
    unique = [r for r in rows if not r.duplicate and r.state not in (TrialState.WAITING, TrialState.RUNNING)]
    ok = [r for r in unique if r.state == TrialState.OK and r.value is not None and not math.isnan(r.value)]
    if not ok:
        return None
    best = min(ok, key=lambda r: (r.value, r.request_id))
    out = {
        "config": best.config,
        "value": _user_value(objective, best),
        "metrics": dict(best.metrics or {}),
        "evaluations": len(unique),
        "technique": best.technique,
    }
    require = _run_require(storage, run_id)
    if require:  # the best of a narrowed space: whoever reads the report later must know it was narrowed
        out["require"] = require
    return out


def _run_require(storage: BaseStorage, run_id: int) -> list[str]:
    """The run's ``--require`` expressions, from the settings stored with it ([] for none, or an older run)."""
    record = next((r for r in storage.list_runs() if int(r.id) == int(run_id)), None)
    try:
        settings = json.loads(record.settings_json or "{}") if record is not None else {}
    except (TypeError, ValueError):
        return []
    return list(settings.get("require") or [])


def write_report(storage: BaseStorage, run_id: int, directory: str, *, objective: Any = None) -> list[str]:
    """Write the four report files into ``directory``; returns their paths."""
    if objective is None:
        objective = _objective_for(storage, run_id)
    os.makedirs(directory, exist_ok=True)
    rows = sorted(storage.trials(run_id), key=lambda r: r.request_id)
    paths = [os.path.join(directory, f) for f in REPORT_FILES]
    best = best_summary(storage, run_id, objective)
    _atomic_write(paths[0], json.dumps(best if best is not None else {
        "config": None, "value": None, "metrics": {}, "evaluations": 0, "technique": None},
        indent=2, sort_keys=True, allow_nan=False) + "\n")
    _write_trials(paths[1], rows, objective)
    _write_techniques(paths[2], rows)
    record = next((r for r in storage.list_runs() if int(r.id) == int(run_id)), None)
    _write_convergence(paths[3], rows, objective, record.name if record is not None else None)
    return paths + _write_technique_files(storage, run_id, directory)


def _write_technique_files(storage: BaseStorage, run_id: int, directory: str) -> list[str]:
    """Text files a technique asked for: run_state "technique" -> {"report_files": {name: text}}.

    Why here: techniques explain themselves (e.g. DLMT's per-step dlmt.md)
    without the core importing them; the search driver stores the root
    technique's ``state_dict()`` under that key. Only plain file names are
    written (no directories), so a state cannot write outside ``directory``.
    """
    state = storage.get_state(run_id, "technique") or {}
    files = state.get("report_files") if isinstance(state, dict) else None
    out = []
    for name, text in (files or {}).items():
        if isinstance(name, str) and isinstance(text, str) and name == os.path.basename(name) \
                and name not in REPORT_FILES and not name.startswith("."):
            path = os.path.join(directory, name)
            _atomic_write(path, text)
            out.append(path)
    return out


def _atomic_write(path: str, text: str) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        fh.write(text)
    os.replace(tmp, path)


def _t0(rows: Sequence[Any]) -> Any:
    times = [r.created_at for r in rows if r.created_at is not None]
    return min(times) if times else None


def _write_trials(path: str, rows: Sequence[Any], objective: Any) -> None:
    params: list[str] = []
    for r in rows:
        for k in r.config:
            if k not in params:
                params.append(k)
    columns = _FIXED + [p if p not in _FIXED else f"param:{p}" for p in params]
    t0 = _t0(rows)
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(columns)
        for number, r in enumerate(rows, 1):
            value = _user_value(objective, r)
            elapsed = (r.finished_at - t0).total_seconds() if (r.finished_at and t0) else None
            config = r.config
            w.writerow([
                number, str(r.state), r.technique, "" if value is None else repr(value),
                "" if r.cost is None else repr(float(r.cost)), int(bool(r.duplicate)),
                "" if elapsed is None else f"{elapsed:.6f}", (r.reason or "").replace("\n", " ")[:500],
            ] + [_cell(config.get(p)) for p in params])
    os.replace(tmp, path)


def _cell(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, (list, dict)):
        return json.dumps(v)
    return str(v)


def _write_techniques(path: str, rows: Sequence[Any]) -> None:
    stats: dict[str, dict[str, Any]] = {}
    best = math.inf
    for r in _finished(rows):
        s = stats.setdefault(r.technique, {"requests": 0, "unique": 0, "duplicates": 0,
                                           "failures": 0, "credit": 0, "best_value": math.inf})
        s["requests"] += 1
        if r.duplicate:
            s["duplicates"] += 1
            continue
        s["unique"] += 1
        if r.state != TrialState.OK or r.value is None:
            s["failures"] += 1
            continue
        s["best_value"] = min(s["best_value"], r.value)
        if r.value < best:
            best = r.value
            s["credit"] += 1
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["technique", "requests", "unique", "duplicates", "failures", "credit", "best_scalar"])
        for name in sorted(stats):
            s = stats[name]
            bv = "" if not math.isfinite(s["best_value"]) else repr(float(s["best_value"]))
            w.writerow([name, s["requests"], s["unique"], s["duplicates"], s["failures"], s["credit"], bv])
    os.replace(tmp, path)


def _axis_label(objective: Any) -> tuple[str, bool]:
    """(y-axis label with its unit, whether to plot the objective's user value rather than the scalar)."""
    kind = getattr(objective, "kind", None)
    metric = getattr(objective, "metric", None)
    if kind == "Minimize" and metric == "time":
        return "best time so far (seconds, lower is better)", True
    if kind == "Minimize" and metric:
        return f"best {metric} so far (app's unit, lower is better)", True
    if kind == "Maximize" and metric:
        return f"best {metric} so far (app's unit, higher is better)", True
    return "best objective scalar so far (lower is better)", False


def convergence_figure(rows: Sequence[Any], objective: Any = None, run_name: str | None = None) -> Any:
    """The convergence plot: best so far against unique evaluations and seconds, titled, best noted.

    Why the title, units and best configuration on the figure: a PNG is often
    looked at away from the run's other files (issue 16).
    """
    import matplotlib

    matplotlib.use("Agg", force=False)
    from matplotlib.figure import Figure

    ylabel, user = _axis_label(objective)
    t0 = _t0(rows)
    evals: list[int] = []
    secs: list[float] = []
    bests: list[float] = []
    best, best_row, n = math.inf, None, 0
    for r in _finished(rows):
        if r.duplicate:
            continue
        n += 1
        if r.state == TrialState.OK and r.value is not None and r.value < best:
            best, best_row = r.value, r
        if best_row is not None and math.isfinite(best):
            shown = _user_value(objective, best_row) if user else best
            evals.append(n)
            secs.append((r.finished_at - t0).total_seconds() if (r.finished_at and t0) else 0.0)
            bests.append(float(shown if shown is not None else best))
    fig = Figure(figsize=(9, 4.2))
    ax1, ax2 = fig.subplots(1, 2)
    ax1.step(evals, bests, where="post")
    ax1.set_xlabel("unique evaluations (count)")
    ax1.set_ylabel(ylabel)
    ax2.step(secs, bests, where="post")
    ax2.set_xlabel("wall-clock time since the first request (seconds)")
    ax2.set_ylabel(ylabel)
    for ax in (ax1, ax2):
        ax.grid(True, alpha=0.3)
    what = json.dumps(getattr(objective, "to_json", lambda: None)()) if objective is not None else "objective"
    fig.suptitle(f"Convergence of run {run_name or '?'} ({n} unique evaluations; {what})", fontsize=10)
    if best_row is not None:
        text = json.dumps(best_row.config, sort_keys=True)
        text = text if len(text) <= 150 else text[:147] + "..."
        fig.text(0.01, 0.01, f"best ({bests[-1]:.6g}, by {best_row.technique}): {text}", fontsize=7)
    else:
        fig.text(0.01, 0.01, "no successful evaluation", fontsize=7)
    fig.tight_layout(rect=(0, 0.05, 1, 0.95))
    return fig


def _write_convergence(path: str, rows: Sequence[Any], objective: Any = None, run_name: str | None = None) -> None:
    fig = convergence_figure(rows, objective, run_name)
    tmp = path + ".tmp.png"
    fig.savefig(tmp, dpi=100)
    os.replace(tmp, path)
