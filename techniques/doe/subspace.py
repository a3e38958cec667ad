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
import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from ensemble.errors import InfeasibleSpaceError, SpaceError

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
        self._listed: list[dict[str, Any]] | None = None  # the enumeration, once count() has made it
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
        if n is None or n > limit:
            return None
        if self._listed is None:
            self._listed = self._list(limit)
        # a count is a promise that enumerate() works: callers enumerate when it is not None
        return n if self._listed is not None else None

    def _list(self, limit: int) -> list[dict[str, Any]] | None:
        """Every valid configuration, or None when they cannot be listed at a bounded cost.

        Why the fallback: ``enumerate_valid`` refuses a constrained group of
        parameters whose *unrestricted* grid is too large, even when fixing most
        of them left only a few valid points (an FPGA flow's 19 options with 15
        fixed: counted small, then refused, which stopped a DLMT run).  The
        free parameters' product, filtered by the full space's validity, is the
        same set when it is small enough to walk.
        """
        try:
            return [dict(c) for c in self.space.enumerate_valid()]
        except SpaceError:
            pass
        free = [p for p in self.base.params if p.name not in self.fixed]
        if not all(getattr(p, "discrete", False) for p in free):
            return None
        if math.prod(int(p.cardinality) for p in free) > 10 * max(int(limit), 1):
            return None
        names = [p.name for p in free]
        order = [p.name for p in self.base.params]
        rows = []
        for values in itertools.product(*(p.values() for p in free)):
            merged = {**self.fixed, **dict(zip(names, values))}
            c = {n: merged[n] for n in order}
            if self.base.is_valid(c):
                rows.append(c)
        return rows

    def enumerate(self) -> list[dict[str, Any]]:
        if self.rows is not None:
            return [dict(c) for c in self.rows]
        if self._listed is None:
            self._listed = self._list(10**7)
        if self._listed is None:
            raise SpaceError(f"DLMT: the sub-space with {sorted(self.fixed)} fixed is too large to list; "
                             "sample it instead (count() returns None for such a sub-space)")
        return [dict(c) for c in self._listed]

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
