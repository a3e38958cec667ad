"""The recorded space: every measured configuration of a file, looked up by value.

Why a separate model: the loaders (Kernel Tuner cache, T4, CSV) differ only in
how they read a file; the replay app, the search-quality benchmark and the
tests all need the same answers to "what did this configuration measure, what
did it cost, and is it part of the space". Keeping that here means a replayed
tuning run and the benchmark's exact random-search baseline see identical data.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

__all__ = ["SPACE_MODES", "Record", "RecordedSpace"]

#: ``file``: the recorded configurations are the space; ``grid``: the
#: cartesian product of each parameter's recorded values (absent -> failed).
SPACE_MODES = ("file", "grid")

ABSENT_REASON = "absent: configuration not recorded in the file"


@dataclass(frozen=True)
class Record:
    """One recorded evaluation.

    ``value`` is the objective in the file's own units and sense (a time in ms,
    or a maximised throughput); ``None`` when the configuration failed.
    ``cost`` is what measuring it cost on the real machine, in seconds.
    """

    value: float | None
    state: str = "OK"
    reason: str | None = None
    cost: float = 0.0
    times: tuple[float, ...] = ()

    @property
    def failed(self) -> bool:
        return self.state != "OK"


@dataclass
class RecordedSpace:
    """Parameters inferred from a file plus a lookup from configuration to record.

    ``values`` holds each parameter's recorded values, sorted (numbers as
    numbers). ``records`` is keyed by the tuple of values in ``names`` order.
    """

    names: list[str]
    values: dict[str, list[Any]]
    records: dict[tuple[Any, ...], Record]
    objective: str = "time"
    maximize: bool = False
    default_mode: str = "file"
    source: str = ""
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        missing = [n for n in self.names if n not in self.values]
        if missing:
            raise ValueError(f"values: no recorded values for parameters {missing}; every name needs a value list")
        if not self.records:
            raise ValueError(f"records: the file {self.source!r} holds no configurations; give a file with at least one row")

    # -- identity -----------------------------------------------------------
    def key(self, config: Mapping[str, Any]) -> tuple[Any, ...]:
        """The lookup key of a configuration (its values in ``names`` order)."""
        return tuple(config[n] for n in self.names)

    def config(self, key: Sequence[Any]) -> dict[str, Any]:
        return dict(zip(self.names, key))

    def check_mode(self, mode: str | None) -> str:
        mode = mode or self.default_mode
        if mode not in SPACE_MODES:
            raise ValueError(f"space mode {mode!r} is unknown; use one of {SPACE_MODES}")
        return mode

    # -- evaluation ---------------------------------------------------------
    def lookup(self, config: Mapping[str, Any]) -> Record | None:
        """The recorded result, or None when the configuration is not in the file."""
        return self.records.get(self.key(config))

    def evaluate(self, config: Mapping[str, Any], *, rng: np.random.Generator | None = None,
                 noise: bool = False) -> Record:
        """Replay one evaluation: the recorded value, or one sampled repeat with ``noise``.

        A configuration absent from the file (possible only in grid mode) is a
        failed evaluation that cost nothing: nothing was ever compiled for it.
        """
        rec = self.lookup(config)
        if rec is None:
            return Record(value=None, state="FAILED", reason=ABSENT_REASON, cost=0.0)
        if noise and not rec.failed and rec.times:
            if rng is None:
                raise ValueError("rng: noise=True samples recorded times and needs a numpy Generator")
            sample = float(rec.times[int(rng.integers(len(rec.times)))])
            return Record(value=sample, state=rec.state, reason=rec.reason, cost=rec.cost, times=rec.times)
        return rec

    def scalar(self, rec: Record) -> float:
        """The number a minimiser sees: value, negated when maximising; inf for failures."""
        if rec.failed or rec.value is None:
            return math.inf
        return -rec.value if self.maximize else rec.value

    # -- the space ----------------------------------------------------------
    def keys(self, mode: str | None = None) -> Iterator[tuple[Any, ...]]:
        """Every configuration of the space in the given mode (recorded order / grid order)."""
        if self.check_mode(mode) == "file":
            yield from self.records
        else:
            yield from itertools.product(*(self.values[n] for n in self.names))

    def size(self, mode: str | None = None) -> int:
        if self.check_mode(mode) == "file":
            return len(self.records)
        return math.prod(len(self.values[n]) for n in self.names)

    def scalars(self, mode: str | None = None) -> np.ndarray:
        """Objective scalar (lower is better, inf = failed) of every configuration of the space."""
        mode = self.check_mode(mode)
        out = np.full(self.size(mode), math.inf)
        for i, key in enumerate(self.keys(mode)):
            rec = self.records.get(key)
            if rec is not None:
                out[i] = self.scalar(rec)
        return out

    def optimum(self) -> tuple[dict[str, Any], float]:
        """The best recorded configuration and its scalar (same in both modes)."""
        best_key, best = None, math.inf
        for key, rec in self.records.items():
            s = self.scalar(rec)
            if s < best:
                best_key, best = key, s
        if best_key is None:
            raise ValueError(f"records: every configuration in {self.source!r} failed; nothing to optimise")
        return self.config(best_key), best

    def counts(self) -> dict[str, int]:
        failed = sum(1 for r in self.records.values() if r.failed)
        return {"recorded": len(self.records), "valid": len(self.records) - failed, "failed": failed,
                "grid": self.size("grid")}

    def to_search_space(self, mode: str | None = None) -> Any:
        """An ``ensemble.SearchSpace`` over the recorded values.

        Each parameter is an ``Enum`` of its sorted recorded values (the index
        view keeps their order, so numeric parameters stay ordinal). In file
        mode a constraint restricts the space to the recorded configurations
        (failed ones included: they are part of the space and fail when run).
        """
        from ensemble.space import (  # local: the core is a peer package
            Enum,
            SearchSpace,
        )

        mode = self.check_mode(mode)
        space = SearchSpace()
        space.add(*(Enum(n, list(self.values[n])) for n in self.names))
        if mode == "file":
            recorded = frozenset(self.records)
            names = tuple(self.names)

            def recorded_in_file(config: Mapping[str, Any]) -> bool:
                return tuple(config[n] for n in names) in recorded

            space.require(recorded_in_file)
        return space
