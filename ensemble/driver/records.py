"""Convert storage rows into the technique's Trial records.

Why a separate module: the search driver, resume, reports and ensemble.tune all
read the same rows; one conversion keeps "what a failed trial is worth"
(math.inf) and "what counts as an evaluation" in one place.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from ensemble.result import TrialState
from ensemble.technique import Trial

__all__ = ["best_of", "row_config", "to_trial"]


def row_config(row: Any) -> dict[str, Any]:
    """The configuration dict of a storage row (FinishedTrial or TrialRow)."""
    config = getattr(row, "config", None)
    if isinstance(config, dict):
        return config
    from ensemble.space.canonical import from_canonical_json

    return from_canonical_json(row.config_json)


def to_trial(row: Any, evaluation: int) -> Trial:
    """A Trial from a finished row; failures and missing values are math.inf."""
    state = str(getattr(row.state, "value", row.state))
    value = row.value
    if state != TrialState.OK or value is None or (isinstance(value, float) and math.isnan(value)):
        value = math.inf
    return Trial(
        config=row_config(row),
        config_hash=row.config_hash,
        value=float(value),
        state=state,
        technique=row.technique or "",
        duplicate=bool(row.duplicate),
        evaluation=evaluation,
        cost=_cost(getattr(row, "cost", None)),
        metrics=getattr(row, "metrics", None) or None,
    )


def _cost(cost: Any) -> float | None:
    """The row's cost in seconds, or None when it was not recorded."""
    if cost is None:
        return None
    cost = float(cost)
    return None if math.isnan(cost) else cost


def best_of(trials: Iterable[Trial]) -> Trial | None:
    """The OK, non-duplicate trial with the lowest value (first one on ties)."""
    best: Trial | None = None
    for t in trials:
        if t.state == TrialState.OK and not t.duplicate and (best is None or t.value < best.value):
            best = t
    return best
