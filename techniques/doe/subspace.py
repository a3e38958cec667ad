"""The sub-space left after factors are fixed (step 8 of the DLMT iteration).

Bruel et al. (CCGRID'19, Section III, step 8) fix the significant factors at
their predicted levels and go on "generating a new design for the new problem
subspace with the remaining factors".  Discrete fixed factors go through the
space's own constraint mechanism (``SearchSpace.restrict_to`` on a copy of the
space), so every configuration the sub-space samples or enumerates is valid in
the full space.  A continuous (Float) factor cannot be listed in
``restrict_to``; it is pinned instead: samples get the fixed value and are kept
only when the full space still calls them valid.

When the whole valid space is small enough to enumerate (``table``: every
valid configuration, from ``SearchSpace.enumerate_valid``), the view is that
table filtered by the fixed values: the same valid set, without rebuilding
the space's constraint analysis at every step.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from typing import Any

import numpy as np

from ensemble.errors import InfeasibleSpaceError

__all__ = ["SubSpace"]


class SubSpace:
    """A view of ``space`` with some parameters held at fixed values."""

    def __init__(self, space: Any, fixed: Mapping[str, Any] | None = None,
                 table: list[dict[str, Any]] | None = None) -> None:
        self.base = space
        self.fixed: dict[str, Any] = dict(fixed or {})
        discrete = {n: v for n, v in self.fixed.items() if getattr(space[n], "discrete", True)}
        self.pinned = {n: v for n, v in self.fixed.items() if n not in discrete}
        self.rows: list[dict[str, Any]] | None = None
        self.space = space
        if table is not None:
            self.rows = [c for c in table if all(c[n] == v for n, v in self.fixed.items())]
        elif discrete:
            self.space = copy.deepcopy(space)
            self.space.restrict_to([discrete], name="DLMT fixed factors " + ", ".join(sorted(discrete)))

    def with_fixed(self, more: Mapping[str, Any]) -> SubSpace:
        """A narrower view: these factors fixed as well."""
        return SubSpace(self.base, {**self.fixed, **dict(more)}, self.rows)

    def is_valid(self, config: Mapping[str, Any]) -> bool:
        return all(config.get(n) == v for n, v in self.fixed.items()) and bool(self.base.is_valid(config))

    def count(self, limit: int) -> int | None:
        """Exact number of valid configurations when at most ``limit`` (None otherwise)."""
        if self.rows is not None:
            return len(self.rows) if len(self.rows) <= limit else None
        if self.pinned:
            return None
        try:
            n = self.space.count_valid(limit=limit)
        except Exception:  # noqa: BLE001 - counting is an optimisation; sampling still works
            return None
        return n if n is not None and n <= limit else None

    def enumerate(self) -> list[dict[str, Any]]:
        if self.rows is not None:
            return [dict(c) for c in self.rows]
        return [dict(c) for c in self.space.enumerate_valid()]

    def sample(self, rng: np.random.Generator, n: int) -> list[dict[str, Any]]:
        """``n`` valid configurations of the sub-space (independent draws)."""
        if self.rows is not None:
            if not self.rows:
                raise InfeasibleSpaceError(f"DLMT: no valid configuration with {self.fixed} fixed")
            return [dict(self.rows[int(i)]) for i in rng.integers(0, len(self.rows), size=n)]
        if not self.pinned:
            return [dict(c) for c in self.space.sample(rng, n)]
        out: list[dict[str, Any]] = []
        for _ in range(50):
            for c in self.space.sample(rng, max(n - len(out), 1)):
                c = {**c, **self.pinned}
                if self.base.is_valid(c):
                    out.append(c)
            if len(out) >= n:
                return out[:n]
        if out:
            return out
        raise InfeasibleSpaceError(
            f"DLMT: no valid configuration with {self.pinned} fixed; the constraints exclude "
            "the predicted level (report this space, or pass terms= without that factor)")
