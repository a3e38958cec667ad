"""Read recorded tuning spaces: Kernel Tuner cache JSON(.gz), T4 JSON, CSV tables.

Why: exhaustively measured spaces are how techniques are compared without a
GPU (Willemsen et al., FGCS 2024; the files in ``shared/data/spaces`` come from
the AutoTuningAssociation benchmark hub). Each loader infers the parameters
from the file (values sorted, numbers as numbers) and returns a
:class:`RecordedSpace`; nothing here knows about searching.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from apps.replay.model import Record, RecordedSpace

__all__ = ["detect_format", "load_csv", "load_kernel_tuner_cache", "load_space", "load_t4", "sorted_values"]

#: Kernel Tuner's per-configuration cost fields, in ms (compile + verify + benchmark).
KT_COST_KEYS = ("compile_time", "verification_time", "benchmark_time")


def _open_text(path: Path) -> str:
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return raw.decode("utf-8")


def detect_format(path: str | Path) -> str:
    """'kt-cache', 't4' or 'csv', from the content (gzip is looked through)."""
    path = Path(path)
    text = _open_text(path)
    head = text.lstrip()[:1]
    if head in ("{", "["):
        data = json.loads(text)
        if isinstance(data, dict) and "cache" in data and "tune_params_keys" in data:
            return "kt-cache"
        if isinstance(data, dict) and isinstance(data.get("results"), list):
            return "t4"
        raise ValueError(f"file {path}: JSON that is neither a Kernel Tuner cache (keys 'cache', "
                         "'tune_params_keys') nor T4 output (key 'results'); convert it to CSV")
    return "csv"


def _num(v: Any) -> Any:
    """JSON-native number for numeric strings; the value itself otherwise."""
    if isinstance(v, str):
        s = v.strip()
        try:
            return int(s)
        except ValueError:
            pass
        try:
            f = float(s)
        except ValueError:
            return v
        return int(f) if f.is_integer() and "." not in s and "e" not in s.lower() else f
    return v


def sorted_values(values: Iterable[Any]) -> list[Any]:
    """Unique values sorted: numbers numerically, otherwise by their string form."""
    uniq = list(dict.fromkeys(values))
    if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in uniq):
        return sorted(uniq)
    if all(isinstance(v, bool) for v in uniq):
        return sorted(uniq)
    return sorted(uniq, key=lambda v: (type(v).__name__, str(v)))


def _infer_values(names: list[str], keys: Iterable[tuple[Any, ...]]) -> dict[str, list[Any]]:
    cols: dict[str, list[Any]] = {n: [] for n in names}
    for key in keys:
        for n, v in zip(names, key):
            cols[n].append(v)
    return {n: sorted_values(cols[n]) for n in names}


def _finite_number(v: Any) -> float | None:
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        return None
    f = float(v)
    return f if math.isfinite(f) else None


def load_kernel_tuner_cache(path: str | Path, *, objective: str | None = None,
                            maximize: bool = False) -> RecordedSpace:
    """A Kernel Tuner cache file. Failed entries carry a failure string as objective.

    Cost = compile_time + verification_time + benchmark_time (ms) per entry.
    """
    path = Path(path)
    data = json.loads(_open_text(path))
    names = list(data["tune_params_keys"])
    obj = objective or data.get("objective") or "time"
    records: dict[tuple[Any, ...], Record] = {}
    for entry in data["cache"].values():
        key = tuple(entry[n] for n in names)
        raw = entry.get(obj)
        value = _finite_number(raw)
        cost = sum(float(entry.get(k) or 0.0) for k in KT_COST_KEYS) / 1000.0
        times = tuple(float(t) for t in entry.get("times") or ())
        if value is None:
            reason = raw if isinstance(raw, str) else f"objective {obj!r} missing or not finite"
            records[key] = Record(value=None, state="FAILED", reason=reason, cost=cost)
        else:
            records[key] = Record(value=value, cost=cost, times=times if obj == "time" else ())
    values = _infer_values(names, records)
    meta = {k: data.get(k) for k in ("device_name", "kernel_name", "problem_size")}
    return RecordedSpace(names=names, values=values, records=records, objective=obj, maximize=maximize,
                         default_mode="file", source=str(path), meta=meta)


def load_t4(path: str | Path, *, objective: str | None = None, maximize: bool = False) -> RecordedSpace:
    """T4 auto-tuning output JSON (``results`` list with ``configuration``,
    ``times``, ``invalidity``, ``measurements``, ``objectives``).

    Cost = compilation + validation + benchmark (ms) from each result's ``times``.
    """
    path = Path(path)
    data = json.loads(_open_text(path))
    results = data["results"]
    if not results:
        raise ValueError(f"file {path}: T4 'results' is empty; give a file with at least one result")
    names = list(results[0]["configuration"])
    obj = objective or (results[0].get("objectives") or ["time"])[0]
    records: dict[tuple[Any, ...], Record] = {}
    for res in results:
        conf = res["configuration"]
        key = tuple(conf[n] for n in names)
        timings = res.get("times") or {}
        cost = sum(float(timings.get(k) or 0.0) for k in ("compilation", "validation", "benchmark")) / 1000.0
        meas = {m.get("name"): m.get("value") for m in res.get("measurements") or ()}
        value = _finite_number(meas.get(obj))
        invalid = res.get("invalidity", "correct")
        if invalid != "correct" or value is None or res.get("correctness", 1) != 1:
            reason = invalid if invalid != "correct" else f"objective {obj!r} missing or not finite"
            records[key] = Record(value=None, state="FAILED", reason=str(reason), cost=cost)
        else:
            runtimes = tuple(float(t) for t in timings.get("runtimes") or ())
            records[key] = Record(value=value, cost=cost, times=runtimes if obj == "time" else ())
    values = _infer_values(names, records)
    return RecordedSpace(names=names, values=values, records=records, objective=obj, maximize=maximize,
                         default_mode="file", source=str(path), meta={"format": "t4"})


def load_csv(path: str | Path, *, objective: str | None = None, maximize: bool = False,
             cost: str | None = None, params: Iterable[str] | None = None) -> RecordedSpace:
    """A CSV table: parameter columns plus an objective column (default: the last).

    ``cost`` names a column of seconds charged per evaluation; ``params`` the
    parameter columns (default: every column but the objective and cost).
    An empty, non-numeric or non-finite objective cell is a failed evaluation
    whose reason is the cell's text. A repeated configuration keeps its first row.
    """
    path = Path(path)
    reader = csv.DictReader(io.StringIO(_open_text(path)))
    header = list(reader.fieldnames or [])
    if len(header) < 2:
        raise ValueError(f"file {path}: a CSV needs parameter columns and an objective column; got {header}")
    obj = objective or header[-1]
    for label, col in (("--objective", obj), ("--cost-column", cost)):
        if col is not None and col not in header:
            raise ValueError(f"{label} {col!r} is not a column of {path}; columns are {header}")
    names = list(params) if params is not None else [c for c in header if c not in (obj, cost)]
    records: dict[tuple[Any, ...], Record] = {}
    for row in reader:
        key = tuple(_num(row[n]) for n in names)
        if key in records:
            continue
        c = _finite_number(_num(row[cost])) if cost else None
        raw = (row.get(obj) or "").strip()
        value = _finite_number(_num(raw))
        if value is None:
            records[key] = Record(value=None, state="FAILED", reason=raw or "empty objective cell", cost=c or 0.0)
        else:
            records[key] = Record(value=value, cost=c or 0.0)
    values = _infer_values(names, records)
    return RecordedSpace(names=names, values=values, records=records, objective=obj, maximize=maximize,
                         default_mode="grid", source=str(path), meta={"format": "csv"})


def load_space(path: str | Path, *, objective: str | None = None, maximize: bool = False,
               cost: str | None = None, fmt: str | None = None) -> RecordedSpace:
    """Load any supported file; the format is detected from the content unless given."""
    fmt = fmt or detect_format(path)
    if fmt == "kt-cache":
        return load_kernel_tuner_cache(path, objective=objective, maximize=maximize)
    if fmt == "t4":
        return load_t4(path, objective=objective, maximize=maximize)
    if fmt == "csv":
        return load_csv(path, objective=objective, maximize=maximize, cost=cost)
    raise ValueError(f"fmt {fmt!r} is unknown; use 'kt-cache', 't4' or 'csv'")


def records_as_rows(space: RecordedSpace) -> list[Mapping[str, Any]]:
    """Flat rows (parameters + value/state/cost) for reports and tests."""
    return [{**space.config(k), "value": r.value, "state": r.state, "cost": r.cost} for k, r in space.records.items()]
