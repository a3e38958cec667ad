"""Outcomes of one evaluation: TrialState, Result, and coerce_result.

``run()`` may return a bare number (the time) or a :class:`Result`; the
drivers pass whatever came back through :func:`coerce_result`, which is the
single place where user output is validated, so a NaN or a wrong type is
reported once with a clear message instead of corrupting the search.
"""

from __future__ import annotations

import dataclasses
import enum
import math
from dataclasses import dataclass, field
from typing import Any

from ensemble.errors import ObjectiveError

__all__ = ["FINISHED_STATES", "Result", "TrialState", "coerce_result"]


class TrialState(str, enum.Enum):
    """Life cycle of a request: WAITING -> RUNNING -> one of the finished states."""

    WAITING = "WAITING"
    RUNNING = "RUNNING"
    OK = "OK"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"
    INVALID = "INVALID"

    def __str__(self) -> str:
        return self.value


#: states a Result may carry
FINISHED_STATES = frozenset({"OK", "FAILED", "TIMEOUT", "INVALID"})


def _number(x: Any, what: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        # NumPy scalars without importing numpy
        if type(x).__module__ == "numpy" and hasattr(x, "item"):
            try:
                item = x.item()
            except (ValueError, TypeError):  # arrays of more than one element
                item = None
            if not isinstance(item, bool) and isinstance(item, (int, float)):
                return _number(item, what)
        raise ObjectiveError(
            f"{what} = {x!r} ({type(x).__name__}) is not a number; return a float"
        )
    x = float(x)
    if math.isnan(x):
        raise ObjectiveError(
            f"{what} is NaN; return Result(state='FAILED', reason=...) for a failed measurement"
        )
    return x


def _time(x: Any, what: str) -> float:
    """A time: a finite number >= 0 (sign rules: only metrics other than time may be negative).

    Why: an ``inf`` or a negative time stored as OK ranks as the best or the
    worst trial for ever (a -1 from a failed parse became the best of a run);
    a measurement that did not work is a FAILED Result with a reason.
    """
    t = _number(x, what)
    if not math.isfinite(t) or t < 0:
        raise ObjectiveError(
            f"{what} is {t!r}; a time must be finite and >= 0 seconds. Return "
            "Result(state='FAILED', reason=...) for a failed measurement, or put a quantity that may be "
            "negative in Result(metrics={...}) and optimise it with Minimize/Maximize(name)"
        )
    return t


@dataclass
class Result:
    """What one evaluation of a configuration produced.

    ``time`` is the default objective metric (seconds or any unit, lower is
    better); ``metrics`` holds any other named numbers; ``times`` the raw
    repeat times; ``cost`` the seconds the evaluation cost (replay charges the
    recorded cost).  A failed evaluation has ``state`` FAILED/TIMEOUT/INVALID
    and a ``reason``.
    """

    time: float | None = None
    state: str = "OK"
    reason: str | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    times: list[float] = field(default_factory=list)
    cost: float | None = None

    def __post_init__(self) -> None:
        state = self.state.value if isinstance(self.state, TrialState) else self.state
        if state not in FINISHED_STATES:
            raise ObjectiveError(
                f"Result(state={self.state!r}): use one of {', '.join(sorted(FINISHED_STATES))}"
            )
        self.state = state

    @property
    def ok(self) -> bool:
        """True for a successful measurement."""
        return self.state == "OK"

    def metric(self, name: str) -> float | None:
        """Value of metric ``name`` ("time" reads the time field)."""
        if name == "time":
            return self.time if self.time is not None else self.metrics.get("time")
        return self.metrics.get(name)

    def to_json(self) -> dict[str, Any]:
        """Plain dict of the fields (for logs and reports)."""
        return dataclasses.asdict(self)


def coerce_result(returned: Any) -> Result:
    """Turn what ``run()`` returned into a checked :class:`Result`.

    A number becomes ``Result(time=x)``; a Result is validated (sign rules: a
    time, in ``time``, ``metrics['time']`` or ``times``, must be finite and
    >= 0; other metrics may be any non-NaN number, negative included, since
    the objective says which way is better; OK results need a time or at
    least one metric).  Anything else raises ObjectiveError saying what to return.
    """
    if isinstance(returned, Result):
        r = returned
    elif (
        isinstance(returned, (int, float))
        and not isinstance(returned, bool)
        or (type(returned).__module__ == "numpy" and hasattr(returned, "item"))
    ):
        return Result(time=_time(returned, "run() returned a time that"))
    else:
        raise ObjectiveError(
            f"run() returned {returned!r} ({type(returned).__name__}); return a float (the time) "
            "or ensemble.Result(time=..., metrics={...}) or Result(state='FAILED', reason=...)"
        )
    as_time = _time if r.ok else _number   # a failed trial's numbers rank nothing
    if r.time is not None:
        r.time = as_time(r.time, "Result.time")
    elif isinstance(r.metrics, dict) and "time" in r.metrics:
        r.metrics["time"] = as_time(r.metrics["time"], "Result.metrics['time']")
    if not isinstance(r.metrics, dict):
        raise ObjectiveError(
            f"Result.metrics = {r.metrics!r}: give a dict of name -> float"
        )
    clean = {}
    for k, v in r.metrics.items():
        if not isinstance(k, str):
            raise ObjectiveError(f"Result.metrics key {k!r} must be a str")
        clean[k] = _number(v, f"Result.metrics[{k!r}]")
    r.metrics = clean
    r.times = [as_time(t, f"Result.times[{i}]") for i, t in enumerate(r.times)]
    if r.cost is not None:
        r.cost = _number(r.cost, "Result.cost")
    if r.ok and r.time is None and not r.metrics:
        raise ObjectiveError(
            "run() returned Result(state='OK') with neither time nor metrics; "
            "set time=... or metrics={...}, or state='FAILED' with a reason"
        )
    return r
