"""Independent components of a constrained space, and exact work on each.

Parameters are joined into one component when a constraint reads both; a
parameter no constraint reads is a component of its own.  The valid set of
the whole space is the Cartesian product of the components' valid sets, so

* the exact count is the product of the components' counts (SPAPT spaces of
  1e36 points split into components of a few hundred points each),
* uniform valid sampling is independent uniform sampling per component, and
* the nearest valid neighbour is found component by component.

A component is enumerated exactly by a join: parameters are added one at a
time, every constraint is checked (as a NumPy array expression, or point by
point for callables) as soon as the parameters it reads are all assigned, and
constraints still waiting for parameters prune partial rows that interval
bounds prove hopeless (:mod:`ensemble.space.interval`), so invalid partial
assignments are dropped before they are multiplied by the next parameter's
values.  Components whose join is too large use :mod:`ensemble.space.fallback`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ensemble.errors import InfeasibleSpaceError
from ensemble.space import fallback
from ensemble.space.constraints import Constraint
from ensemble.space.interval import certainly_false
from ensemble.space.nearest import TableIndex
from ensemble.space.params import DiscreteParameter, Parameter

__all__ = ["Component", "split_components", "value_array"]

#: grids up to this many points are enumerated once and cached for sampling/repair
TABLE_LIMIT = 2_000_000
#: parameters with more values than this (huge ranges, long permutations) are never tabulated
PARAM_LIMIT = 1_000_000
#: a join gives up after this many candidate rows per row it may keep
WORK_FACTOR = 20
#: tables built implicitly for components with callables (each row is a Python call)
SCALAR_TABLE_LIMIT = 100_000
_BLOCK = 1 << 20
_PROBE = 1024


def value_array(p: DiscreteParameter) -> np.ndarray:
    """The values of ``p`` as a NumPy array with Python-compatible semantics."""
    vals = p.values()
    if all(isinstance(v, bool) for v in vals):
        return np.array(vals, dtype=bool)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in vals):
        if all(-(2**62) < v < 2**62 for v in vals):
            return np.array(vals, dtype=np.int64)
    elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals):
        return np.array(vals, dtype=float)
    elif all(isinstance(v, str) for v in vals):
        return np.array(vals, dtype=str)
    arr = np.empty(len(vals), dtype=object)
    for i, v in enumerate(vals):
        arr[i] = v
    return arr


def _times_values(rows: np.ndarray, card: int) -> np.ndarray:
    """Every row followed by each index 0..card-1 of the next parameter (row r, value v at r * card + v)."""
    return np.concatenate(
        [
            np.repeat(rows, card, axis=0),
            np.tile(np.arange(card, dtype=rows.dtype), rows.shape[0])[:, None],
        ],
        axis=1,
    )


class Component:
    """A set of parameters tied together by constraints."""

    def __init__(self, params: list[Parameter], constraints: list[Constraint]) -> None:
        self.params = params
        self.names = [p.name for p in params]
        self.constraints = constraints
        #: every parameter has finitely many values
        self.finite = all(isinstance(p, DiscreteParameter) for p in params)
        self.grid_size: float = (
            math.prod(p.cardinality for p in params)  # type: ignore[attr-defined]
            if self.finite
            else math.inf
        )
        #: finite and every parameter small enough to index with value arrays
        self.discrete = self.finite and all(
            p.cardinality <= PARAM_LIMIT  # type: ignore[attr-defined]
            for p in params
        )
        pos = {n: i for i, n in enumerate(self.names)}
        # a constraint is checked right after the last of its parameters is assigned
        self._due: list[list[Constraint]] = [[] for _ in params]
        for c in constraints:
            self._due[max(pos[n] for n in c.names)].append(c)
        self._values = [value_array(p) for p in params] if self.discrete else None  # type: ignore[arg-type]
        self._table: np.ndarray | None = None
        self._index: TableIndex | None = None
        # (row limit, work budget) pairs a join already failed under
        self._failed: list[tuple[float, float]] = []
        self._pos = pos
        self._vectorised = all(
            c.expression is not None or c.allowed is not None for c in constraints
        )
        # a table of allowed rows whose parameters come first seeds the join
        self._seed = next(
            (
                c
                for c in constraints
                if c.allowed is not None
                and tuple(self.names[: len(c.names)]) == c.names
            ),
            None,
        )
        # expression constraints that can prune partial rows right after parameter j
        self._touch: list[list[Constraint]] = [[] for _ in params]
        self._ranges: list[tuple[float, float] | None] = []
        if self._values is not None:
            for arr in self._values:
                num = arr.dtype.kind in "iufb" and arr.size > 0
                a = arr.astype(float) if num else None
                self._ranges.append(
                    (float(a.min()), float(a.max())) if a is not None else None
                )
            for c in constraints:
                if c.expression is None:
                    continue
                last = max(pos[n] for n in c.names)
                for n in c.names:
                    if pos[n] < last and self._values[pos[n]].dtype.kind in "iufbU":
                        self._touch[pos[n]].append(c)

    # --- exact enumeration -------------------------------------------------
    def table(
        self, limit: float = TABLE_LIMIT, work_limit: float | None = None
    ) -> np.ndarray | None:
        """All valid index rows (shape (m, k)), or None when the work exceeds ``limit``.

        The join never holds more than ``limit`` surviving partial rows and
        expands them in blocks, so memory stays bounded; it gives up (None) when
        the survivors or the total work (``WORK_FACTOR * limit`` candidate rows)
        exceed that.  A grid of at most ``limit`` points therefore always
        succeeds, and pruning often lets far larger grids succeed too.  Tables
        of up to TABLE_LIMIT rows are cached.
        """
        if self._table is not None:
            return self._table
        budget = WORK_FACTOR * limit if work_limit is None else work_limit
        if not self.discrete or any(
            lim >= limit and b >= budget for lim, b in self._failed
        ):
            return None
        cards = self._cards()
        rows: np.ndarray = np.zeros((1, 0), dtype=self._dtype())
        work = 0.0
        start_at = 0
        if self._seed is not None:  # start from the allowed rows, not their grid
            k = len(self._seed.names)
            rows = self._seed.allowed.rows.astype(self._dtype())
            for j in range(k):
                rows = self._filter(rows, j, skip=self._seed)
            start_at = k
            if rows.shape[0] > limit:
                self._failed.append((limit, budget))
                return None
        for j, card in enumerate(cards):
            if j < start_at:
                continue
            block = max(1, int(limit) // card)
            kept, survivors = [], 0
            for start in range(0, rows.shape[0], block):
                part = self._extend(rows[start : start + block], j, card)
                work += min(block, rows.shape[0] - start) * card
                survivors += part.shape[0]
                if survivors > limit or work > budget:
                    self._failed.append((limit, budget))
                    return None
                kept.append(part)
            rows = np.concatenate(kept) if kept else rows[:0]
            if rows.shape[0] == 0:
                rows = np.zeros((0, len(cards)), dtype=rows.dtype)
                break
        if rows.shape[0] <= TABLE_LIMIT:
            self._table = rows
        return rows

    def _cards(self) -> list[int]:
        return [p.cardinality for p in self.params]  # type: ignore[attr-defined]

    def _dtype(self) -> type:
        top = max(self._cards())
        return np.int8 if top < 127 else np.int16 if top < 32767 else np.int32

    def _filter(
        self, rows: np.ndarray, j: int, skip: Constraint | None = None
    ) -> np.ndarray:
        """Keep rows (parameters 0..j assigned) that meet or may still meet the constraints."""
        return self._kept(rows, j, skip)[0]

    def _kept(
        self, rows: np.ndarray, j: int, skip: Constraint | None = None, at: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray | None]:
        """``_filter``'s rows, and ``at`` (one entry per row: the merged count's row numbers) filtered
        alike; None when not given, so the join pays for no second gather."""
        for c in self._due[j]:
            if rows.shape[0] == 0:
                return rows, at
            if c is skip:
                continue
            keep = self._mask(c, rows)
            rows = rows[keep]
            at = None if at is None else at[keep]
        for c in self._touch[j]:
            if rows.shape[0] == 0:
                return rows, at
            if rows.shape[0] > 4 * _PROBE:
                # pruning is optional (skipping it is always sound): try it on a
                # sample first and skip it when it would remove nothing
                # random rows: strided ones can align with the value cycle of the last parameter
                pick = np.random.default_rng(j).integers(rows.shape[0], size=_PROBE)
                probe = rows[pick]
                if not self._prune(c, probe, j).any():
                    continue
            keep = ~self._prune(c, rows, j)
            rows = rows[keep]
            at = None if at is None else at[keep]
        return rows, at

    def _extend(self, rows: np.ndarray, j: int, card: int) -> np.ndarray:
        """Every row combined with every value of parameter j, filtered."""
        return self._filter(_times_values(rows, card), j)

    def _prune(self, c: Constraint, rows: np.ndarray, j: int) -> np.ndarray:
        """Rows (params 0..j assigned) for which ``c`` certainly fails whatever comes next."""
        assert self._values is not None and c.expression is not None
        exact, ranges = {}, {}
        for name in c.names:
            i = self._pos[name]
            if i <= j:
                exact[name] = self._values[i][rows[:, i]]
            else:  # None for non-numeric values: the bound is "anything"
                ranges[name] = self._ranges[i]
        return certainly_false(c.expression.tree, exact, ranges, rows.shape[0])

    def _mask(self, c: Constraint, rows: np.ndarray) -> np.ndarray:
        """Bool mask of the rows meeting ``c`` (evaluated in blocks to bound memory)."""
        if rows.shape[0] > _BLOCK:
            return np.concatenate(
                [
                    self._mask(c, rows[i : i + _BLOCK])
                    for i in range(0, rows.shape[0], _BLOCK)
                ]
            )
        assert self._values is not None
        n = rows.shape[0]
        idx = [self._pos[name] for name in c.names]
        if c.allowed is not None:
            return c.allowed.member_rows(rows[:, idx])
        cols = {name: self._values[i][rows[:, i]] for name, i in zip(c.names, idx)}

        def as_dicts() -> list[dict[str, Any]]:
            ps = [self.params[i] for i in idx]
            return [
                {p.name: p.value_at(int(r[i])) for p, i in zip(ps, idx)}  # type: ignore[attr-defined]
                for r in rows
            ]

        return c.holds_many(cols, n, as_dicts)

    def count(self, limit: float) -> int | None:
        """Exact number of valid assignments, or None when the grid exceeds ``limit``."""
        if not self.constraints:
            return int(self.grid_size) if self.finite else None
        t = self.table(limit)
        return None if t is None else int(t.shape[0])

    def count_merged(self, limit: float) -> int | None:
        """Exact number of valid assignments by variable elimination, or None past ``limit``.

        The join of :meth:`table` keeps every valid partial row; counting needs
        less.  Once every constraint that reads parameter i has been checked,
        column i can no longer decide anything, so it is cleared and the rows
        that now agree on every column are merged into one that carries how
        many it stands for.  Rows then grow with the values the pending
        constraints still read, not with the product of the parameters placed
        so far (hypterm's CUDA space at 64^3: 93.6 million valid
        configurations, at most 86,655 merged rows).  ``limit`` bounds the
        merged rows and, times WORK_FACTOR, the candidate rows checked; None
        when either is passed or the component is not discrete.  Nothing is
        cached: sampling and repair keep using :meth:`table`.
        """
        if not self.constraints:
            return int(self.grid_size) if self.finite else None
        if not self.discrete:
            return None
        pos, k = self._pos, len(self.names)
        dead_after = list(range(k))  # the step after which column i is read no more
        for c in self.constraints:
            last = max(pos[n] for n in c.names)
            for n in c.names:
                dead_after[pos[n]] = max(dead_after[pos[n]], last)
        rows: np.ndarray = np.zeros((1, 0), dtype=self._dtype())
        weights = np.ones(1, dtype=object if self.grid_size >= 2**62 else np.int64)
        work, budget = 0.0, WORK_FACTOR * limit
        for j, card in enumerate(self._cards()):
            block = max(1, int(limit) // card)
            kept, kept_w = [], []
            for start in range(0, rows.shape[0], block):
                part = rows[start : start + block]
                work += part.shape[0] * card
                if work > budget:
                    return None
                full = _times_values(part, card)  # row r with value v is row r * card + v
                got, at = self._kept(full, j, at=np.arange(full.shape[0]))
                assert at is not None
                kept.append(got)
                kept_w.append(weights[start : start + block][at // card])
            rows = np.concatenate(kept)
            weights = np.concatenate(kept_w)
            if rows.shape[0] == 0:
                return 0
            rows[:, [i for i in range(j + 1) if dead_after[i] <= j]] = 0
            rows, which = np.unique(rows, axis=0, return_inverse=True)
            merged = np.zeros(rows.shape[0], dtype=weights.dtype)
            np.add.at(merged, which.ravel(), weights)
            weights = merged
            if rows.shape[0] > limit:
                return None
        return int(weights.sum())

    def decode(self, row: Sequence[int]) -> dict[str, Any]:
        """Index row -> {name: value}."""
        return {p.name: p.value_at(int(i)) for p, i in zip(self.params, row)}  # type: ignore[attr-defined]

    def infeasible(self) -> InfeasibleSpaceError:
        """The error for an empty component, naming its constraints."""
        alone = []
        for c in self.constraints:
            sub = Component([p for p in self.params if p.name in c.names], [c])
            if (
                sub.discrete
                and sub.grid_size <= TABLE_LIMIT
                and sub.count(TABLE_LIMIT) == 0
            ):
                alone.append(c.label)
        if alone:
            what = (
                "constraint(s) "
                + "; ".join(repr(a) for a in alone)
                + " cannot be met at all"
            )
        else:
            what = (
                "constraints "
                + "; ".join(repr(c.label) for c in self.constraints)
                + " cannot be met together"
            )
        return InfeasibleSpaceError(
            f"no valid configuration: {what} (parameters {', '.join(self.names)}); "
            "relax the constraint(s) or widen the parameter ranges"
        )

    # --- sampling ----------------------------------------------------------
    def holds(self, assignment: dict[str, Any]) -> bool:
        """All constraints of the component hold for a full assignment."""
        return all(c.holds(assignment) for c in self.constraints)

    def sample(self, rng: np.random.Generator, n: int) -> list[dict[str, Any]]:
        """``n`` valid assignments: uniform from the table when it exists."""
        if self._table is not None and self._table.shape[0]:  # cached: no checks needed
            return self._draw(self._table, rng, n)
        if not self.constraints:
            return [{p.name: p.sample(rng) for p in self.params} for _ in range(n)]
        t = self.table(self._lazy_limit(), 4 * self._lazy_limit())
        if t is not None:
            if t.shape[0] == 0:
                raise self.infeasible()
            return self._draw(t, rng, n)
        return fallback.sample_search(self, rng, n)

    def _draw(
        self, t: np.ndarray, rng: np.random.Generator, n: int
    ) -> list[dict[str, Any]]:
        """``n`` rows of table ``t`` drawn uniformly, decoded."""
        if n == 1:  # the common case (one proposal at a time): skip array overheads
            return [self.decode(t[int(rng.integers(t.shape[0]))].tolist())]
        return [self.decode(r) for r in t[rng.integers(t.shape[0], size=n)].tolist()]

    def valid_rows(self, rows: np.ndarray) -> np.ndarray:
        """Bool mask: which index rows meet every constraint (vectorised)."""
        ok = np.ones(rows.shape[0], dtype=bool)
        for j in range(len(self.params)):
            for c in self._due[j]:
                live = np.flatnonzero(ok)
                if live.size == 0:
                    return ok
                ok[live] = self._mask(c, rows[live])
        return ok

    def _lazy_limit(self) -> int:
        """Table size worth building implicitly (sample/repair), not asked for by the user."""
        return TABLE_LIMIT if self._vectorised else SCALAR_TABLE_LIMIT

    # --- repair ------------------------------------------------------------
    def nearest(
        self, current: dict[str, Any], rng: np.random.Generator
    ) -> dict[str, Any]:
        """The valid assignment nearest to ``current`` (L1 over normalised indices)."""
        t = self.table(self._lazy_limit(), 4 * self._lazy_limit())
        if t is not None:
            if t.shape[0] == 0:
                raise self.infeasible()
            if self._index is None or self._index.table is not t:
                self._index = TableIndex(t, self._cards())
            here = np.array(
                [
                    p.index_of(current.get(p.name))  # type: ignore[attr-defined]
                    if p.is_legal(current.get(p.name))
                    else -p.cardinality  # type: ignore[attr-defined]
                    for p in self.params
                ],
                dtype=np.int64,
            )
            return self.decode(t[self._index.nearest(here, rng)].tolist())
        if self.discrete:
            got = fallback.nearest_local(self, current, rng)
            if got is not None:
                return got
        got = fallback.dfs(self, rng, prefer=current)
        return got if got is not None else fallback.sample_search(self, rng, 1)[0]


def split_components(
    params: list[Parameter], constraints: list[Constraint]
) -> list[Component]:
    """Group parameters linked by constraints (union-find), keeping space order."""
    parent = {p.name: p.name for p in params}

    def find(a: str) -> str:
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for c in constraints:
        if not c.names:
            continue
        r0 = find(c.names[0])
        for n in c.names[1:]:
            parent[find(n)] = r0
    groups: dict[str, list[Parameter]] = {}
    for p in params:
        groups.setdefault(find(p.name), []).append(p)
    by_root: dict[str, list[Constraint]] = {}
    for c in constraints:
        if not c.names:
            continue
        by_root.setdefault(find(c.names[0]), []).append(c)
    comps = [
        Component(join_order(ps, by_root.get(root, [])), by_root.get(root, []))
        for root, ps in groups.items()
    ]
    for c in constraints:
        if not c.names and not c.holds({}):
            raise InfeasibleSpaceError(
                f"no valid configuration: constraint {c.label!r} reads no parameter and is "
                "always false; remove it or fix it"
            )
    return comps


def join_order(
    params: list[Parameter], constraints: list[Constraint]
) -> list[Parameter]:
    """Order parameters so constraints complete early in the join (greedy).

    Each step takes the parameter that completes the most constraints, then the
    one sharing the most constraints with those already placed, then the one in
    the most constraints, then the smallest; ties keep the space's order.  Early
    completion prunes partial rows before they multiply, which keeps the join
    small (the same idea as a min-degree elimination order).
    """
    if len(params) <= 2 or not constraints:
        return list(params)
    table = next((c for c in constraints if c.allowed is not None), None)
    if (
        table is not None
    ):  # its rows seed the join: its parameters go first, in its order
        by_name = {p.name: p for p in params}
        head = [by_name[n] for n in table.names]
        rest = [p for p in params if p.name not in table.names]
        return head + rest
    sets = [set(c.names) for c in constraints]
    degree = {p.name: sum(p.name in cs for cs in sets) for p in params}
    placed: set[str] = set()
    order: list[Parameter] = []
    remaining = list(params)
    while remaining:

        def key(ip: tuple[int, Parameter]) -> tuple[int, int, int, float, int]:
            i, p = ip
            done = placed | {p.name}
            completes = sum(1 for cs in sets if p.name in cs and cs <= done)
            touches = sum(1 for cs in sets if p.name in cs and cs & placed)
            card = getattr(p, "cardinality", math.inf)
            return (completes, touches, degree[p.name], -card, -i)

        _, best = max(enumerate(remaining), key=key)
        order.append(best)
        placed.add(best.name)
        remaining.remove(best)
    return order
