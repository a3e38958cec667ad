"""Independent components of a constrained space, and exact work on each.

Parameters are joined into one component when a constraint reads both; a
parameter no constraint reads is a component of its own.  The valid set of
the whole space is the Cartesian product of the components' valid sets, so

* the exact count is the product of the components' counts (SPAPT spaces of
  1e36 points split into components of a few hundred points each),
* uniform valid sampling is independent uniform sampling per component, and
* the nearest valid neighbour is found component by component.

A component whose grid is small enough is enumerated exactly by a join:
parameters are added one at a time and every constraint is checked (as a
NumPy array expression, or point by point for callables) as soon as the
parameters it reads are all assigned, so invalid partial assignments are
pruned before they are multiplied by the next parameter's values.  Larger
components fall back to a depth-first sequential sampler with the same
pruning, then to bounded rejection.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from ensemble.errors import InfeasibleSpaceError
from ensemble.space.constraints import Constraint
from ensemble.space.interval import certainly_false
from ensemble.space.params import DiscreteParameter, Parameter

__all__ = ["Component", "split_components", "value_array"]

#: grids up to this many points are enumerated once and cached for sampling/repair
TABLE_LIMIT = 2_000_000
#: node budget of one depth-first sampling attempt
DFS_BUDGET = 20_000
#: random index rows tried by vectorised rejection before depth-first search
BATCH_DRAWS = 1_000_000
#: the same when a constraint must be evaluated point by point (callables)
SCALAR_DRAWS = 50_000
#: parameters with more values than this (huge ranges, long permutations) are never tabulated
PARAM_LIMIT = 1_000_000
#: a join gives up after this many candidate rows per row it may keep
WORK_FACTOR = 20
#: partial rows kept per step by the randomised join used for huge components
BEAM_WIDTH = 20_000
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
        # (row limit, work budget) pairs a join already failed under
        self._failed: list[tuple[float, float]] = []
        self._pos = pos
        self._vectorised = all(c.expression is not None for c in constraints)
        # expression constraints that can prune partial rows right after parameter j
        self._touch: list[list[Constraint]] = [[] for _ in params]
        self._ranges: list[tuple[float, float]] = []
        if self._values is not None:
            for arr in self._values:
                num = arr.dtype.kind in "iufb" and arr.size > 0
                a = arr.astype(float) if num else None
                self._ranges.append(
                    (float(a.min()), float(a.max()))
                    if a is not None
                    else (-math.inf, math.inf)
                )
            for c in constraints:
                if c.expression is None:
                    continue
                last = max(pos[n] for n in c.names)
                for n in c.names:
                    if pos[n] < last and self._values[pos[n]].dtype.kind in "iufb":
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
        for j, card in enumerate(cards):
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

    def _filter(self, rows: np.ndarray, j: int) -> np.ndarray:
        """Keep rows (parameters 0..j assigned) that meet or may still meet the constraints."""
        for c in self._due[j]:
            if rows.shape[0] == 0:
                return rows
            rows = rows[self._mask(c, rows)]
        for c in self._touch[j]:
            if rows.shape[0] == 0:
                return rows
            if rows.shape[0] > 4 * _PROBE:
                # pruning is optional (skipping it is always sound): try it on a
                # sample first and skip it when it would remove nothing
                # random rows: strided ones can align with the value cycle of the last parameter
                pick = np.random.default_rng(j).integers(rows.shape[0], size=_PROBE)
                probe = rows[pick]
                if not self._prune(c, probe, j).any():
                    continue
            rows = rows[~self._prune(c, rows, j)]
        return rows

    def _extend(self, rows: np.ndarray, j: int, card: int) -> np.ndarray:
        """Every row combined with every value of parameter j, filtered."""
        m = rows.shape[0]
        full = np.concatenate(
            [
                np.repeat(rows, card, axis=0),
                np.tile(np.arange(card, dtype=rows.dtype), m)[:, None],
            ],
            axis=1,
        )
        return self._filter(full, j)

    def _beam(
        self, rng: np.random.Generator, n: int, width: int = BEAM_WIDTH
    ) -> np.ndarray:
        """Valid rows by a randomised join: each step keeps at most ``width`` random extensions.

        Not uniform, but it applies the same pruning as :meth:`table` and finds
        valid points in components far too large to tabulate.
        """
        cards = self._cards()
        rows = np.zeros((1, 0), dtype=np.int64)
        for j, card in enumerate(cards):
            m = rows.shape[0]
            if m == 0:
                break
            if m * card <= width:
                rows = self._extend(rows, j, card)
                continue
            pick = rng.integers(m, size=width)
            vals = rng.integers(card, size=width)
            rows = self._filter(np.concatenate([rows[pick], vals[:, None]], axis=1), j)
        if rows.shape[0] == 0:
            return rows.reshape(0, len(cards))
        return rows[rng.integers(rows.shape[0], size=n)]

    def _prune(self, c: Constraint, rows: np.ndarray, j: int) -> np.ndarray:
        """Rows (params 0..j assigned) for which ``c`` certainly fails whatever comes next."""
        assert self._values is not None and c.expression is not None
        exact, ranges = {}, {}
        for name in c.names:
            i = self._pos[name]
            if i <= j:
                exact[name] = self._values[i][rows[:, i]]
            else:
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
        return self._sample_search(rng, n)

    def _draw(
        self, t: np.ndarray, rng: np.random.Generator, n: int
    ) -> list[dict[str, Any]]:
        """``n`` rows of table ``t`` drawn uniformly, decoded."""
        if n == 1:  # the common case (one proposal at a time): skip array overheads
            return [self.decode(t[int(rng.integers(t.shape[0]))].tolist())]
        return [self.decode(r) for r in t[rng.integers(t.shape[0], size=n)].tolist()]

    def _random_rows(self, rng: np.random.Generator, m: int) -> np.ndarray:
        cards = [p.cardinality for p in self.params]  # type: ignore[attr-defined]
        return np.stack([rng.integers(c, size=m) for c in cards], axis=1)

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

    def _sample_batches(self, rng: np.random.Generator, n: int) -> list[dict[str, Any]]:
        """Uniform valid samples by vectorised rejection over this component only."""
        got: list[np.ndarray] = []
        have, drawn = 0, 0
        batch = max(4 * n, 1024)
        cap = BATCH_DRAWS if self._vectorised else SCALAR_DRAWS
        while have < n and drawn < cap:
            rows = self._random_rows(rng, batch)
            drawn += batch
            good = rows[self.valid_rows(rows)]
            got.append(good)
            have += good.shape[0]
            if drawn >= 1 << 16 and (n - have) * drawn > (cap - drawn) * max(have, 1):
                break  # at this acceptance rate the cap cannot be met: leave it to the beam
            if have == 0:
                batch = min(batch * 4, 1 << 16)
            else:  # aim the next batch at what is still missing
                rate = have / drawn
                batch = int(min(max((n - have) / rate * 1.2, 256), 1 << 16))
        if have == 0:
            return []
        allrows = np.concatenate(got)[:n]
        return [self.decode(r) for r in allrows]

    def _lazy_limit(self) -> int:
        """Table size worth building implicitly (sample/repair), not asked for by the user."""
        return TABLE_LIMIT if self._vectorised else SCALAR_TABLE_LIMIT

    def _draw_cap(self) -> int:
        if not self.discrete:
            return DFS_BUDGET
        return BATCH_DRAWS if self._vectorised else SCALAR_DRAWS

    def _sample_search(
        self, rng: np.random.Generator, n: int = 1
    ) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self.discrete:
            out = self._sample_batches(rng, n)
            width = BEAM_WIDTH if self._vectorised else BEAM_WIDTH // 10
            for _ in range(3):
                if len(out) >= n:
                    break
                rows = self._beam(rng, n - len(out), width)
                out.extend(self.decode(r) for r in rows)
        failures = 0
        while len(out) < n and failures < 3:
            got = self._dfs(rng, prefer=None)
            if got is None:
                failures += 1
            else:
                out.append(got)
        if not self.discrete:
            for _ in range(DFS_BUDGET):
                if len(out) >= n:
                    break
                cand = {p.name: p.sample(rng) for p in self.params}
                if self.holds(cand):
                    out.append(cand)
        if len(out) < n:
            raise InfeasibleSpaceError(
                f"could not find a configuration of {', '.join(self.names)} meeting "
                + "; ".join(repr(c.label) for c in self.constraints)
                + f" (random draws: {self._draw_cap()}, then "
                "depth-first search with pruning); the constraints may be infeasible or very "
                "tight: relax them, or give names=[...] to callable constraints so the space "
                "can be split into independent parts"
            )
        return out

    def _candidates(self, j: int, rng: np.random.Generator, prefer: Any) -> list[Any]:
        p = self.params[j]
        if isinstance(p, DiscreteParameter) and p.cardinality <= 64:
            idx: Any = rng.permutation(p.cardinality)
            if prefer is not None and p.is_legal(prefer):
                i0 = p.index_of(prefer)
                idx = sorted(
                    idx, key=lambda i: abs(int(i) - i0)
                )  # stable: random among ties
            return [p.value_at(int(i)) for i in idx]
        k = 16
        vals = [p.sample(rng) for _ in range(k)]
        if prefer is not None and p.is_legal(prefer):
            x0 = np.asarray(p.to_unit(prefer))
            scale = 0.05
            near = []
            for _ in range(k):
                near.append(
                    p.from_unit(np.clip(x0 + rng.normal(0, scale, x0.shape), 0, 1))
                )
                scale *= 1.5
            vals = [prefer] + near + vals
        return vals

    def _dfs(
        self, rng: np.random.Generator, prefer: dict[str, Any] | None
    ) -> dict[str, Any] | None:
        """Depth-first assignment with pruning; None when the node budget runs out."""
        budget = [DFS_BUDGET]
        assignment: dict[str, Any] = {}

        def go(j: int) -> bool:
            if j == len(self.params):
                return True
            name = self.names[j]
            for v in self._candidates(
                j, rng, None if prefer is None else prefer.get(name)
            ):
                budget[0] -= 1
                if budget[0] < 0:
                    return False
                assignment[name] = v
                if all(c.holds(assignment) for c in self._due[j]) and go(j + 1):
                    return True
            assignment.pop(name, None)
            return False

        try:
            ok = go(0)
        except RecursionError:  # pragma: no cover - components of > 900 parameters
            return None
        return dict(assignment) if ok else None

    # --- repair ------------------------------------------------------------
    def nearest(
        self, current: dict[str, Any], rng: np.random.Generator
    ) -> dict[str, Any]:
        """The valid assignment nearest to ``current`` (L1 over normalised indices)."""
        t = self.table(self._lazy_limit(), 4 * self._lazy_limit())
        if t is not None:
            if t.shape[0] == 0:
                raise self.infeasible()
            here = []
            for p in self.params:
                assert isinstance(p, DiscreteParameter)
                v = current.get(p.name)
                here.append(p.index_of(v) if p.is_legal(v) else -p.cardinality)
            spans = [max(p.cardinality - 1, 1) for p in self.params]  # type: ignore[attr-defined]
            scale = np.asarray(spans, dtype=np.float64)
            d = (
                np.abs(t.astype(np.int64) - np.array(here)[None, :]).astype(float)
                / scale
            )
            dist = d.sum(axis=1)
            best = np.flatnonzero(dist == dist.min())
            return self.decode(t[int(rng.choice(best))])
        if self.discrete:
            got = self._nearest_local(current, rng)
            if got is not None:
                return got
        got = self._dfs(rng, prefer=current)
        return got if got is not None else self._sample_search(rng, 1)[0]

    def _nearest_local(
        self, current: dict[str, Any], rng: np.random.Generator
    ) -> dict[str, Any] | None:
        """Nearest valid point among perturbations of ``current`` of growing radius."""
        cards = np.array([p.cardinality for p in self.params], dtype=np.int64)  # type: ignore[attr-defined]
        here = np.array(
            [
                p.index_of(current[p.name]) if p.is_legal(current.get(p.name)) else 0  # type: ignore[attr-defined]
                for p in self.params
            ],
            dtype=np.int64,
        )
        scale = np.maximum(cards - 1, 1).astype(float)
        k = len(self.params)
        m = 4096
        for radius in (1, 2, 4, 8, 16, 64, 1 << 20):
            # change a random subset of coordinates (about 1-3 of them) by up to +-radius
            change = rng.random((m, k)) < min(1.0, 2.0 / k)
            change[np.arange(m), rng.integers(k, size=m)] = True
            step = rng.integers(-radius, radius + 1, size=(m, k))
            rows = np.clip(
                here[None, :] + np.where(change, step, 0), 0, cards[None, :] - 1
            )
            good = rows[self.valid_rows(rows)]
            if good.shape[0]:
                dist = (np.abs(good - here[None, :]) / scale).sum(axis=1)
                best = np.flatnonzero(dist == dist.min())
                return self.decode(good[int(rng.choice(best))])
        return None


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
    comps = [Component(ps, by_root.get(root, [])) for root, ps in groups.items()]
    for c in constraints:
        if not c.names and not c.holds({}):
            raise InfeasibleSpaceError(
                f"no valid configuration: constraint {c.label!r} reads no parameter and is "
                "always false; remove it or fix it"
            )
    return comps
