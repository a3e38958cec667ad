"""``opentuner.resultsdb.models``: the records an OpenTuner app touches.

Why plain classes and not OpenTuner's ORM models: an app only builds a
``Result(time=...)`` and reads ``desired_result.configuration.data``; the
measurements themselves go to our database (ensemble.storage), so these
records never need a session. The class attributes ``Result.time``,
``Result.accuracy``, ... stand in for the ORM columns so that objective
subclasses that order by ``[Result.time]`` or ``[-Result.accuracy]`` can be
read (ensemble.compat.opentuner.search.objective maps them to our
objectives).
"""

from __future__ import annotations

import math
from typing import Any

from ensemble.result import Result as _EnsembleResult

__all__ = ["Column", "Configuration", "DesiredResult", "Input", "Result", "TuningRun"]

#: metrics OpenTuner's Result has as columns (kept as metrics in our database)
RESULT_METRICS = ("time", "accuracy", "energy", "size", "confidence")


class Column:
    """Stands for a Result column in ``result_order_by_terms()``; ``-col`` means descending."""

    def __init__(self, name: str, descending: bool = False) -> None:
        self.name = name
        self.descending = descending

    def __neg__(self) -> Column:
        return Column(self.name, not self.descending)

    def __repr__(self) -> str:
        return f"{'-' if self.descending else ''}Result.{self.name}"


class Result:
    """One measurement as an OpenTuner app reports it (``state``: OK, TIMEOUT or ERROR)."""

    time: Any = Column("time")
    accuracy: Any = Column("accuracy")
    energy: Any = Column("energy")
    size: Any = Column("size")
    confidence: Any = Column("confidence")

    def __init__(self, time: float | None = None, accuracy: float | None = None,
                 energy: float | None = None, size: float | None = None,
                 confidence: float | None = None, state: str = "OK",
                 extra: dict[str, Any] | None = None, **columns: Any) -> None:
        self.time, self.accuracy, self.energy = time, accuracy, energy
        self.size, self.confidence, self.state = size, confidence, state
        self.extra: dict[str, Any] = dict(extra or {})
        # ORM columns an app may pass (configuration=, collection_cost=, ...)
        for key, value in columns.items():
            setattr(self, key, value)

    # OpenTuner's helpers for attributes beyond the columns (kept as metrics)
    def set_attribute(self, key: str, value: Any) -> Result:
        self.extra[key] = value
        return self

    def get_attribute(self, key: str, default: Any = None) -> Any:
        return self.extra.get(key, default)

    def update_attributes(self, mapping: dict[str, Any] | None) -> Result:
        self.extra.update(mapping or {})
        return self

    def metrics(self) -> dict[str, float]:
        """Numeric columns and numeric extra attributes, as our Result's metrics."""
        out: dict[str, float] = {}
        for key in RESULT_METRICS[1:]:
            value = getattr(self, key)
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                out[key] = float(value)
        for key, value in self.extra.items():
            if isinstance(key, str) and isinstance(value, (int, float)) and not isinstance(value, bool) \
                    and key not in RESULT_METRICS:
                out[key] = float(value)
        return out

    def to_ensemble(self) -> _EnsembleResult:
        """Our Result: ERROR -> FAILED, TIMEOUT -> TIMEOUT, ``time=inf`` with OK -> FAILED."""
        metrics = self.metrics()
        if self.state in ("ERROR", "FAILED"):
            return _EnsembleResult(state="FAILED", reason="run() returned Result(state='ERROR')",
                                   metrics=metrics)
        if self.state == "TIMEOUT":
            return _EnsembleResult(state="TIMEOUT", reason="run() returned Result(state='TIMEOUT')",
                                   metrics=metrics)
        time = self.time
        if isinstance(time, (int, float)) and math.isinf(time):
            return _EnsembleResult(state="FAILED", reason="run() returned Result(time=inf)", metrics=metrics)
        return _EnsembleResult(time=None if time is None else float(time), metrics=metrics)

    def __repr__(self) -> str:
        parts = [f"{k}={getattr(self, k)!r}" for k in RESULT_METRICS if getattr(self, k) is not None]
        return f"Result({', '.join(parts + [f'state={self.state!r}'])})"


class Configuration:
    """A configuration as OpenTuner apps see it: ``.data`` is the dict keyed by their names."""

    def __init__(self, data: Any = None, hash: str | None = None, program: Any = None, **_: Any) -> None:
        self.data = data
        self.hash = hash
        self.program = program

    def __repr__(self) -> str:
        return f"Configuration({self.data!r})"


class Input:
    """OpenTuner's input record; our runs have one fixed input."""

    def __init__(self, path: str | None = None, input_class: Any = None, extra: Any = None) -> None:
        self.path, self.input_class, self.extra = path, input_class, extra


class DesiredResult:
    """A request to measure ``configuration`` within ``limit`` seconds."""

    def __init__(self, configuration: Configuration | None = None, limit: float | None = None,
                 requestor: str | None = None, id: int | None = None, **extra: Any) -> None:
        self.configuration = configuration
        self.limit = limit
        self.requestor = requestor
        self.id = id
        self.state = "REQUESTED"
        self.result: Result | None = None
        for key, value in extra.items():
            setattr(self, key, value)


class TuningRun:
    """Summary of a run (name, final configuration, state), filled in at the end."""

    def __init__(self, name: str | None = None, database: str | None = None,
                 final_config: Configuration | None = None, state: str = "QUEUED") -> None:
        self.name, self.database = name, database
        self.final_config, self.state = final_config, state
