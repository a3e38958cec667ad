"""Argument checks shared by every store, so the SQL and in-memory stores refuse the same things alike.

Why a module of its own: the conformance suite asserts the error messages
(they name the argument and the fix), and two copies of a check would drift.
Nothing here touches a database.
"""

from __future__ import annotations

import math
from typing import Any

from ensemble.errors import StorageError
from ensemble.result import TrialState
from ensemble.storage.records import FINISHED_STATES

__all__ = ["FINISHED", "check_worker", "finished_state", "number"]

#: The terminal states, in lifecycle order.
FINISHED: tuple[TrialState, ...] = FINISHED_STATES
# keyed by the plain strings: a TrialState member hashes and compares like its value, so both look up
_BY_VALUE: dict[str, TrialState] = {s.value: s for s in FINISHED}


def finished_state(state: Any) -> TrialState:
    """``state`` (a finished TrialState or its string) as the TrialState member; StorageError otherwise."""
    try:
        found = _BY_VALUE.get(state)
    except TypeError:  # unhashable
        found = None
    if found is None:
        raise StorageError(f"finish(state={state!r}): use one of {', '.join(s.value for s in FINISHED)}")
    return found


def number(x: Any, name: str) -> float | None:
    """``x`` as a float column value; NaN means "no value" and is stored as None on every backend."""
    if x is None:
        return None
    try:
        f = float(x)
    except (TypeError, ValueError):
        raise StorageError(f"finish({name}={x!r}): must be a number (seconds or objective value) or None") from None
    return None if math.isnan(f) else f


def check_worker(worker: Any) -> None:
    """Refuse a worker name that could not tell two workers apart."""
    if not isinstance(worker, str) or not worker:
        raise StorageError(f"worker={worker!r}: pass a non-empty name unique to this worker, e.g. 'host:pid:1'")
