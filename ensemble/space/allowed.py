"""A constraint given as the list of allowed configurations (recorded spaces).

A replayed, exhaustively measured space is valid exactly where a measurement
exists.  Writing that as a callable (``tuple(c[n] for n in names) in
recorded``) works, but hides the structure: the space cannot count or sample
it without calling the function on every grid point.  :class:`AllowedTable`
keeps the allowed rows as index tuples instead, so the component's table is
seeded with them directly (exact count and uniform sampling whatever the grid
size) and membership of many rows is one vectorised lookup.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import numpy as np

from ensemble.errors import ConfigurationError, SpaceError
from ensemble.space.params import DiscreteParameter, Parameter

__all__ = ["AllowedTable"]


class AllowedTable:
    """Constraint: the values of ``names`` must be one of the given rows."""

    expression = None
    function = None
    declared = True

    def __init__(
        self,
        params: Sequence[Parameter],
        configs: Iterable[Mapping[str, Any]],
        label: str,
    ) -> None:
        for p in params:
            if not isinstance(p, DiscreteParameter):
                raise SpaceError(
                    f"restrict_to(): parameter {p.name!r} is continuous; allowed "
                    "configurations need parameters with finitely many values"
                )
        self.params = list(params)
        self.names = tuple(p.name for p in params)
        self.label = label
        self.allowed = self
        cards = [p.cardinality for p in self.params]  # type: ignore[attr-defined]
        total = 1.0
        for c in cards:
            total *= c
        if total >= 2.0**62:
            raise SpaceError(
                f"restrict_to(): the parameters {', '.join(self.names)} span {total:.3g} "
                "points, too many to key; restrict fewer parameters"
            )
        self.mult = np.ones(len(cards), dtype=np.int64)
        for j in range(len(cards) - 2, -1, -1):
            self.mult[j] = self.mult[j + 1] * cards[j + 1]
        rows = []
        for i, cfg in enumerate(configs):
            try:
                rows.append([p.index_of(cfg[p.name]) for p in self.params])  # type: ignore[attr-defined]
            except KeyError as exc:
                raise ConfigurationError(
                    f"restrict_to(): configuration #{i} has no value for {exc.args[0]!r}"
                ) from None
            except ConfigurationError as exc:
                raise ConfigurationError(
                    f"restrict_to(): configuration #{i}: {exc}"
                ) from None
        if not rows:
            raise SpaceError(
                "restrict_to(): no configurations given; give at least one"
            )
        arr = np.asarray(rows, dtype=np.int64)
        keys, first = np.unique(arr @ self.mult, return_index=True)
        self.keys = keys
        #: unique allowed index rows, in the order of ``names``
        self.rows = arr[np.sort(first)]

    def member_rows(self, idx: np.ndarray) -> np.ndarray:
        """Bool mask: which index rows (columns in ``names`` order) are allowed."""
        k = idx.astype(np.int64) @ self.mult
        pos = np.minimum(np.searchsorted(self.keys, k), self.keys.size - 1)
        return self.keys[pos] == k

    def holds(self, config: Mapping[str, Any]) -> bool:
        """True when the configuration's values of ``names`` are an allowed row."""
        try:
            idx = [p.index_of(config[p.name]) for p in self.params]  # type: ignore[attr-defined]
        except ConfigurationError:
            return False
        return bool(self.member_rows(np.asarray([idx]))[0])

    def holds_many(self, columns: Any, n: int, rows: Any) -> np.ndarray:
        """Per-point fallback used where only value rows are at hand."""
        return np.fromiter((self.holds(r) for r in rows()), dtype=bool, count=n)

    @property
    def source(self) -> str | None:
        return None

    def to_json(self) -> dict[str, Any]:
        """Names and allowed value rows (restorable)."""
        return {
            "allowed": list(self.names),
            "rows": [
                [p.value_at(int(i)) for p, i in zip(self.params, r)]  # type: ignore[attr-defined]
                for r in self.rows.tolist()
            ],
            "label": self.label,
        }

    def __repr__(self) -> str:
        return f"AllowedTable({self.label!r}, {self.rows.shape[0]} rows over {list(self.names)})"
