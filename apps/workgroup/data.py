"""The work-group data set: exported from sweep runs, shipped as a compact CSV extract.

Two gzip'd CSV files make the extract (package data in ``apps/workgroup/data``):

* ``scenarios.csv.gz``: one row per scenario: ``scenario`` (the run name),
  ``device``, ``kernel``, ``family``, ``dtype``, ``rows``, ``cols``,
  ``w_max`` and every feature of :data:`apps.workgroup.features.FEATURE_NAMES`;
* ``measurements.csv.gz``: one row per (scenario, work-group size): ``scenario``,
  ``wr``, ``wc``, ``time`` (seconds, the median of the repeats; empty when
  refused or failed) and ``refused`` (0/1).

:func:`export_database` writes them from the runs of a results database,
:func:`load` reads them into a :class:`WorkgroupData` of plain arrays that
``techniques.workgroup`` trains on.
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from apps.workgroup.features import FEATURE_NAMES
from ensemble.errors import ConfigurationError

__all__ = ["PACKAGED", "WorkgroupData", "combine", "export_database", "load", "merge"]

#: folder of the shipped extract
PACKAGED = Path(__file__).resolve().parent / "data"

_SCENARIO_COLS = tuple(dict.fromkeys(("scenario", "device", "kernel", "family", "dtype", "rows", "cols", "w_max")
                                     + FEATURE_NAMES))


@dataclass
class WorkgroupData:
    """Scenarios with features and their measured sizes; arrays aligned by scenario index."""

    scenarios: list[dict[str, Any]]                     # the scenario rows (names, w_max, features)
    features: np.ndarray                                # (n_scenarios, n_features) f(s)
    times: list[dict[tuple[int, int], float]] = field(default_factory=list)   # legal w -> t(s, w)
    refused: list[set[tuple[int, int]]] = field(default_factory=list)          # W_refused(s)

    def __len__(self) -> int:
        return len(self.scenarios)

    def subset(self, index: Any) -> WorkgroupData:
        """The scenarios at ``index`` (a list of positions)."""
        idx = list(index)
        return WorkgroupData([self.scenarios[i] for i in idx], self.features[idx],
                             [self.times[i] for i in idx], [self.refused[i] for i in idx])

    def column(self, name: str) -> list[Any]:
        return [s[name] for s in self.scenarios]


def _flatten(features: dict[str, Any]) -> dict[str, float]:
    out = {f"dev_{k}": v for k, v in features["device_features"].items()}
    out.update(features["kernel_features"])
    out.update(features["dataset_features"])
    return out


def export_database(database: str | list[str], out_dir: str | Path) -> tuple[int, int]:
    """Write the extract from every complete ``wg:`` run of one or more databases; returns (scenarios, rows)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    srows: list[dict[str, Any]] = []
    mrows: list[tuple[str, int, int, str, int]] = []
    for db in [database] if isinstance(database, str) else database:
        _export_one(db, srows, mrows)
    with gzip.open(out / "scenarios.csv.gz", "wt", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(_SCENARIO_COLS))
        w.writeheader()
        w.writerows(srows)
    with gzip.open(out / "measurements.csv.gz", "wt", newline="") as fh:
        w2 = csv.writer(fh)
        w2.writerow(("scenario", "wr", "wc", "time", "refused"))
        w2.writerows(sorted(mrows))
    return len(srows), len(mrows)


def _export_one(database: str, srows: list[dict[str, Any]], mrows: list[tuple[str, int, int, str, int]]) -> None:
    from ensemble.storage import Storage

    with Storage(database) as st:
        for run in st.list_runs():
            if not run.name.startswith("wg:"):
                continue
            info = st.get_state(run.id, "scenario") or {}
            if not info.get("complete"):
                continue
            row = {k: info[k] for k in ("device", "kernel", "family", "dtype", "rows", "cols", "w_max")}
            row["scenario"] = run.name
            row.update(_flatten(info))
            srows.append(row)
            for t in st.trials(run.id):
                if t.duplicate:
                    continue
                c = t.config
                refused = t.state != "OK" and (t.reason or "").startswith("refused")
                tm = t.metrics.get("time") if t.state == "OK" else None
                mrows.append((run.name, int(c["wr"]), int(c["wc"]), "" if tm is None else repr(float(tm)),
                              int(refused)))


def combine(folders: list[str | Path], out_dir: str | Path) -> tuple[int, int]:
    """One extract from several (e.g. the PoCL and the NVIDIA sweeps); returns (scenarios, rows)."""
    scen: list[dict[str, str]] = []
    meas: list[dict[str, str]] = []
    for f in folders:
        scen += _read(Path(f) / "scenarios.csv.gz")
        meas += _read(Path(f) / "measurements.csv.gz")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with gzip.open(out / "scenarios.csv.gz", "wt", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(_SCENARIO_COLS))
        w.writeheader()
        w.writerows(scen)
    with gzip.open(out / "measurements.csv.gz", "wt", newline="") as fh:
        w2 = csv.DictWriter(fh, fieldnames=["scenario", "wr", "wc", "time", "refused"])
        w2.writeheader()
        w2.writerows(meas)
    return len(scen), len(meas)


def _read(path: Path) -> list[dict[str, str]]:
    with gzip.open(path, "rt", newline="") as fh:
        return list(csv.DictReader(io.StringIO(fh.read())))


def load(folder: str | Path | None = None) -> WorkgroupData:
    """Read an extract (default: the one shipped with the package)."""
    base = Path(folder) if folder is not None else PACKAGED
    spath, mpath = base / "scenarios.csv.gz", base / "measurements.csv.gz"
    if not spath.exists() or not mpath.exists():
        raise ConfigurationError(f"load(folder={str(base)!r}): scenarios.csv.gz and measurements.csv.gz are "
                                 "needed there; make them with `python -m scripts.cummins_dataset --export`")
    scen = _read(spath)
    pos = {r["scenario"]: i for i, r in enumerate(scen)}
    times: list[dict[tuple[int, int], float]] = [{} for _ in scen]
    refused: list[set[tuple[int, int]]] = [set() for _ in scen]
    for r in _read(mpath):
        i = pos.get(r["scenario"])
        if i is None:
            continue
        w = (int(r["wr"]), int(r["wc"]))
        if r["refused"] == "1":
            refused[i].add(w)
        elif r["time"]:
            t = float(r["time"])
            if math.isfinite(t) and t > 0:
                times[i][w] = t
    rows: list[dict[str, Any]] = []
    for r in scen:
        d: dict[str, Any] = dict(r)
        for k in ("rows", "cols", "w_max"):
            d[k] = int(float(r[k]))
        rows.append(d)
    feats = np.array([[float(r[n]) for n in FEATURE_NAMES] for r in scen], dtype=float).reshape(len(scen), -1)
    keep = [i for i in range(len(scen)) if times[i]]
    data = WorkgroupData(rows, feats, times, refused)
    return data.subset(keep)


def merge(*parts: WorkgroupData) -> WorkgroupData:
    """One data set from several (e.g. the PoCL and the NVIDIA extracts)."""
    return WorkgroupData([s for p in parts for s in p.scenarios],
                         np.vstack([p.features for p in parts]) if parts else np.zeros((0, len(FEATURE_NAMES))),
                         [t for p in parts for t in p.times], [r for p in parts for r in p.refused])


def scenario_json(data: WorkgroupData, i: int) -> str:
    """One scenario as JSON (for logs and the service's records)."""
    return json.dumps(data.scenarios[i], sort_keys=True)
