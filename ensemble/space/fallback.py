"""Fallback sampling and repair for components too large to tabulate.

When a component's valid rows cannot be enumerated (see
:meth:`Component.table`), valid points are still needed.  In order of cost:

1. vectorised rejection inside the component only (uniform; stops early when
   the acceptance rate cannot reach the target within the draw budget),
2. a randomised join ("beam"): the table's join, but each step keeps a random
   subset of the extensions, with the same constraint checks and interval
   pruning (valid, not exactly uniform),
3. depth-first assignment with the constraints checked as soon as their
   parameters are assigned,

then :class:`~ensemble.errors.InfeasibleSpaceError` naming the constraints.
Repair searches perturbations of growing radius around the point and keeps
the nearest valid one, then falls back to a depth-first search that tries
values closest to the current ones first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ensemble.errors import InfeasibleSpaceError
from ensemble.space.params import DiscreteParameter

if TYPE_CHECKING:
    from ensemble.space.components import Component

__all__ = [
    "beam",
    "dfs",
    "nearest_local",
    "random_rows",
    "sample_batches",
    "sample_search",
]

#: node budget of one depth-first sampling attempt
DFS_BUDGET = 20_000
#: random index rows tried by vectorised rejection before depth-first search
BATCH_DRAWS = 1_000_000
#: the same when a constraint must be evaluated point by point (callables)
SCALAR_DRAWS = 50_000
#: partial rows kept per step by the randomised join used for huge components
BEAM_WIDTH = 20_000


def beam(
    comp: Component, rng: np.random.Generator, n: int, width: int = BEAM_WIDTH
) -> np.ndarray:
    """Valid rows by a randomised join: each step keeps at most ``width`` random extensions.

    Not uniform, but it applies the same pruning as ``Component.table`` and finds
    valid points in components far too large to tabulate.
    """
    cards = comp._cards()
    rows = np.zeros((1, 0), dtype=np.int64)
    for j, card in enumerate(cards):
        m = rows.shape[0]
        if m == 0:
            break
        if m * card <= width:
            rows = comp._extend(rows, j, card)
            continue
        pick = rng.integers(m, size=width)
        vals = rng.integers(card, size=width)
        rows = comp._filter(np.concatenate([rows[pick], vals[:, None]], axis=1), j)
    if rows.shape[0] == 0:
        return rows.reshape(0, len(cards))
    return rows[rng.integers(rows.shape[0], size=n)]


def random_rows(comp: Component, rng: np.random.Generator, m: int) -> np.ndarray:
    cards = [p.cardinality for p in comp.params]  # type: ignore[attr-defined]
    return np.stack([rng.integers(c, size=m) for c in cards], axis=1)


def sample_batches(
    comp: Component, rng: np.random.Generator, n: int
) -> list[dict[str, Any]]:
    """Uniform valid samples by vectorised rejection over this component only."""
    got: list[np.ndarray] = []
    have, drawn = 0, 0
    batch = max(4 * n, 1024)
    cap = BATCH_DRAWS if comp._vectorised else SCALAR_DRAWS
    while have < n and drawn < cap:
        rows = random_rows(comp, rng, batch)
        drawn += batch
        good = rows[comp.valid_rows(rows)]
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
    return [comp.decode(r) for r in allrows]


def draw_cap(comp: Component) -> int:
    if not comp.discrete:
        return DFS_BUDGET
    return BATCH_DRAWS if comp._vectorised else SCALAR_DRAWS


def sample_search(
    comp: Component, rng: np.random.Generator, n: int = 1
) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    if comp.discrete:
        out = sample_batches(comp, rng, n)
        width = BEAM_WIDTH if comp._vectorised else BEAM_WIDTH // 10
        for _ in range(3):
            if len(out) >= n:
                break
            rows = beam(comp, rng, n - len(out), width)
            out.extend(comp.decode(r) for r in rows)
    failures = 0
    while len(out) < n and failures < 3:
        got = dfs(comp, rng, prefer=None)
        if got is None:
            failures += 1
        else:
            out.append(got)
    if not comp.discrete:
        for _ in range(DFS_BUDGET):
            if len(out) >= n:
                break
            cand = {p.name: p.sample(rng) for p in comp.params}
            if comp.holds(cand):
                out.append(cand)
    if len(out) < n:
        raise InfeasibleSpaceError(
            f"could not find a configuration of {', '.join(comp.names)} meeting "
            + "; ".join(repr(c.label) for c in comp.constraints)
            + f" (random draws: {draw_cap(comp)}, then "
            "depth-first search with pruning); the constraints may be infeasible or very "
            "tight: relax them, or give names=[...] to callable constraints so the space "
            "can be split into independent parts"
        )
    return out


def candidates(
    comp: Component, j: int, rng: np.random.Generator, prefer: Any
) -> list[Any]:
    p = comp.params[j]
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
            near.append(p.from_unit(np.clip(x0 + rng.normal(0, scale, x0.shape), 0, 1)))
            scale *= 1.5
        vals = [prefer] + near + vals
    return vals


def dfs(
    comp: Component, rng: np.random.Generator, prefer: dict[str, Any] | None
) -> dict[str, Any] | None:
    """Depth-first assignment with pruning; None when the node budget runs out."""
    budget = [DFS_BUDGET]
    assignment: dict[str, Any] = {}

    def go(j: int) -> bool:
        if j == len(comp.params):
            return True
        name = comp.names[j]
        for v in candidates(comp, j, rng, None if prefer is None else prefer.get(name)):
            budget[0] -= 1
            if budget[0] < 0:
                return False
            assignment[name] = v
            if all(c.holds(assignment) for c in comp._due[j]) and go(j + 1):
                return True
        assignment.pop(name, None)
        return False

    try:
        ok = go(0)
    except RecursionError:  # pragma: no cover - components of > 900 parameters
        return None
    return dict(assignment) if ok else None


def nearest_local(
    comp: Component, current: dict[str, Any], rng: np.random.Generator
) -> dict[str, Any] | None:
    """Nearest valid point among perturbations of ``current`` of growing radius."""
    cards = np.array([p.cardinality for p in comp.params], dtype=np.int64)  # type: ignore[attr-defined]
    here = np.array(
        [
            p.index_of(current[p.name]) if p.is_legal(current.get(p.name)) else 0  # type: ignore[attr-defined]
            for p in comp.params
        ],
        dtype=np.int64,
    )
    scale = np.maximum(cards - 1, 1).astype(float)
    k = len(comp.params)
    m = 4096
    for radius in (1, 2, 4, 8, 16, 64, 1 << 20):
        # change a random subset of coordinates (about 1-3 of them) by up to +-radius
        change = rng.random((m, k)) < min(1.0, 2.0 / k)
        change[np.arange(m), rng.integers(k, size=m)] = True
        step = rng.integers(-radius, radius + 1, size=(m, k))
        rows = np.clip(here[None, :] + np.where(change, step, 0), 0, cards[None, :] - 1)
        good = rows[comp.valid_rows(rows)]
        if good.shape[0]:
            dist = (np.abs(good - here[None, :]) / scale).sum(axis=1)
            best = np.flatnonzero(dist == dist.min())
            return comp.decode(good[int(rng.choice(best))])
    return None
