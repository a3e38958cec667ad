"""Turn whatever app.run() gave back into a typed Result, never raising.

Why a module of its own: every measurement path (same thread, worker threads,
worker processes, ``ensemble-tuner worker``) must treat a bad return value the
same way: NaN or a wrong type is the app's bug, so the trial is FAILED with an
``ObjectiveError:`` reason and a warning on the ``ensemble.driver`` logger, and
the run goes on. The validation rules themselves live in
``ensemble.result.coerce_result``.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from ensemble.errors import ObjectiveError
from ensemble.result import Result, TrialState
from ensemble.result import coerce_result as _validate

__all__ = ["coerce_result", "failure_from_exception"]

_log = logging.getLogger("ensemble.driver")


def coerce_result(value: Any) -> Result:
    """A checked Result for a run() return value; a bad value gives a FAILED Result."""
    try:
        return _validate(value)
    except ObjectiveError as err:
        _log.warning("ObjectiveError: %s", err)
        return Result(state=TrialState.FAILED, reason=f"ObjectiveError: {err}")


def failure_from_exception(exc: BaseException, *, hint: str | None = None) -> Result:
    """A FAILED Result carrying a short traceback summary of an exception in run() (and a hint)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = ""
    if frames:
        last = frames[-1]
        where = f" (at {last.filename}:{last.lineno} in {last.name})"
    reason = f"{type(exc).__name__}: {exc}{where}" + (f"; {hint}" if hint else "")
    _log.warning("run() raised %s", reason)
    return Result(state=TrialState.FAILED, reason=reason[:2000])
