"""D-optimal designs: candidate sets, Fedorov's exchange, the D-criterion.

Bruel et al. (CCGRID'19, thesis appendix E, Section IV-B) construct each
step's design as a *D-optimal* design for the step's linear model, chosen by
Fedorov's exchange algorithm (Fedorov, *Theory of optimal experiments*,
1972) from a pool of candidate experiments; appendix F measures designs by

    D(M) = | M^T M / k |^(1/p)                         (appendix F, Sec. 1.4)

for a model matrix M of k experiments and p model terms, with factors coded
to [-1, 1].  Here every non-intercept column of the model matrix is coded
to [-1, 1] by its range over the candidate set; with an intercept in the
model this is an affine change of columns, which multiplies det(M^T M) by a
constant, so the D-optimal design is the same as for the raw columns.

Fedorov's exchange: with A = (M^T M)^-1, d(x) = f(x)^T A f(x) and
d(x, y) = f(x)^T A f(y), swapping design point x_i for candidate x_j
multiplies det(M^T M) by 1 + Delta(x_i, x_j), with

    Delta(x_i, x_j) = d(x_j) - d(x_i) - d(x_i) d(x_j) + d(x_i, x_j)^2;

each iteration makes the best swap until no swap improves by more than
``tol`` (relative).  :func:`coordinate_exchange` is the alternative that
docs/DOE.md compares it with (Meyer & Nachtsheim, Technometrics 37, 1995):
change one factor of one design point at a time over its levels.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ensemble.errors import TechniqueError

__all__ = [
    "CANDIDATE_STRATEGIES",
    "Design",
    "candidate_set",
    "code_columns",
    "coordinate_exchange",
    "d_criterion",
    "d_efficiency",
    "fedorov",
]

#: candidate-set sampling strategies of appendix F, Table 1
CANDIDATE_STRATEGIES = ("uniform", "biased", "biased+normal")


@dataclass
class Design:
    """Rows chosen from a candidate matrix, and how good they are."""

    rows: list[int]
    #: D-criterion |M^T M / k|^(1/p) of the coded model matrix (0 for a singular design)
    d: float
    log_det: float
    iterations: int


def code_columns(x: np.ndarray, ref: np.ndarray | None = None) -> np.ndarray:
    """Columns mapped to [-1, 1] by their range in ``ref`` (a constant column stays as it is)."""
    ref = x if ref is None else ref
    lo, hi = ref.min(axis=0), ref.max(axis=0)
    span = np.where(hi > lo, hi - lo, 1.0)
    coded = 2.0 * (x - lo) / span - 1.0
    const = hi <= lo
    coded[:, const] = x[:, const]
    return coded


def _log_det(m: np.ndarray) -> float:
    sign, ld = np.linalg.slogdet(m.T @ m)
    return float(ld) if sign > 0 else -np.inf


def d_criterion(m: np.ndarray) -> float:
    """|M^T M / k|^(1/p) (appendix F, Sec. 1.4); 0 for a singular design."""
    k, p = m.shape
    ld = _log_det(m)
    return 0.0 if not np.isfinite(ld) else float(np.exp((ld - p * np.log(k)) / p))


def d_efficiency(m: np.ndarray, reference: np.ndarray) -> float:
    """D(M) / D(reference): 1 when ``m`` is as informative per run as the reference."""
    ref = d_criterion(reference)
    return d_criterion(m) / ref if ref > 0 else 0.0


def _initial(f: np.ndarray, n: int, rng: np.random.Generator) -> list[int]:
    """A nonsingular start: p rows of greatest prediction variance from a random first row, then random rows."""
    k, p = f.shape
    chosen = [int(rng.integers(k))]
    ridge = 1e-8 * np.eye(p)
    while len(chosen) < min(p, n):
        a_inv = np.linalg.inv(f[chosen].T @ f[chosen] + ridge)
        var = np.einsum("ij,jk,ik->i", f, a_inv, f)
        var[chosen] = -np.inf
        chosen.append(int(np.argmax(var)))
    rest = np.setdiff1d(np.arange(k), chosen)
    chosen += [int(i) for i in rng.permutation(rest)[: n - len(chosen)]]
    return chosen


def fedorov(f: np.ndarray, n: int, rng: np.random.Generator, *, tol: float = 1e-6,
            max_iter: int = 1000, include: Sequence[int] = ()) -> Design:
    """A D-optimal n-run design from the candidate rows of ``f`` (coded model matrix).

    No candidate is used twice (a repeated configuration would be answered
    from the database, not measured again).  ``include`` rows stay in the
    design (Section III: "the user can require that specific points ... are
    included").
    """
    k, p = f.shape
    if n > k:
        raise TechniqueError(f"design size n={n} exceeds the {k} candidates; lower design_size or widen the space")
    if n < p:
        raise TechniqueError(f"design size n={n} is below the p={p} model terms; give design_size >= {p + 1}")
    rows = list(dict.fromkeys(int(i) for i in include))
    if rows:
        rest = _initial(np.delete(f, rows, axis=0), n - len(rows), rng) if n > len(rows) else []
        others = np.setdiff1d(np.arange(k), rows)
        rows += [int(others[i]) for i in rest]
    else:
        rows = _initial(f, n, rng)
    locked = {int(i) for i in include}
    it = 0
    for it in range(1, max_iter + 1):
        m = f[rows]
        info = m.T @ m
        if np.linalg.matrix_rank(info) < p:
            info = info + 1e-9 * np.trace(info) / p * np.eye(p)
        a_inv = np.linalg.inv(info)
        fa = f @ a_inv
        d_all = np.einsum("ij,ij->i", fa, f)                 # d(x_j) for every candidate
        cross = fa @ f[rows].T                                # d(x_j, x_i): K x n
        d_in = d_all[rows]
        delta = d_all[:, None] - d_in[None, :] - d_all[:, None] * d_in[None, :] + cross ** 2
        delta[rows, :] = -np.inf                              # no repeats
        for col, r in enumerate(rows):
            if r in locked:
                delta[:, col] = -np.inf
        j, i = np.unravel_index(int(np.argmax(delta)), delta.shape)
        if not delta[j, i] > tol:
            break
        rows[i] = int(j)
    m = f[rows]
    return Design(rows=rows, d=d_criterion(m), log_det=_log_det(m), iterations=it)


def coordinate_exchange(configs: list[dict[str, Any]], levels: Mapping[str, Sequence[Any]],
                        matrix: Callable[[list[dict[str, Any]]], np.ndarray],
                        is_valid: Callable[[dict[str, Any]], bool], *, max_pass: int = 10) -> tuple[list[dict[str, Any]], int]:
    """Coordinate exchange from a starting design (Meyer & Nachtsheim 1995).

    For each design point and factor, try every level of that factor and keep
    the change that raises det(M^T M) most among the valid configurations not
    already in the design; repeat passes until one changes nothing.  ``matrix``
    maps configurations to their coded model matrix (same coding as the start).
    Returns the design and the number of passes.
    """
    design = [dict(c) for c in configs]
    best = _log_det(matrix(design))
    passes = 0
    for passes in range(1, max_pass + 1):
        changed = False
        for i in range(len(design)):
            for name, values in levels.items():
                trials = []
                for v in values:
                    if v == design[i][name]:
                        continue
                    c = {**design[i], name: v}
                    if c in design or not is_valid(c):
                        continue
                    trials.append(c)
                if not trials:
                    continue
                scores = []
                for c in trials:
                    cand = design[:i] + [c] + design[i + 1:]
                    scores.append(_log_det(matrix(cand)))
                j = int(np.argmax(scores))
                if np.isfinite(scores[j]) and (not np.isfinite(best) or scores[j] > best + 1e-9 * max(1.0, abs(best))):
                    design[i], best, changed = trials[j], scores[j], True
        if not changed:
            break
    return design, passes


def _biased_index(rng: np.random.Generator, n_levels: int, strategy: str) -> int:
    """Appendix F's biased sampling: levels pushed to the ends (U-shaped law), some near the centre."""
    if strategy == "biased+normal" and rng.random() < 0.08:     # Table 2: 8 % normal samples, sd 0.04 (coded)
        t = 0.5 + rng.normal(0.0, 0.02)
    else:
        t = rng.beta(0.2, 0.2)                                   # U-shaped law: most mass at both ends
    return int(np.clip(round(t * (n_levels - 1)), 0, n_levels - 1))


def candidate_set(sub: Any, rng: np.random.Generator, size: int, *, strategy: str = "uniform",
                  numeric: Sequence[str] = (), limit: int = 20_000) -> tuple[list[dict[str, Any]], bool]:
    """Candidate experiments from the valid (sub-)space; returns (configs, exact).

    ``exact`` is True when the whole valid sub-space has at most ``size``
    points and is enumerated (the full candidate set).  ``uniform`` samples
    the space's own sampler; ``biased`` / ``biased+normal`` redraw each numeric
    discrete factor's level from appendix F's biased law and repair to the
    nearest valid configuration.
    """
    if strategy not in CANDIDATE_STRATEGIES:
        raise TechniqueError(f"candidates={strategy!r}: choose one of {CANDIDATE_STRATEGIES}")
    count = sub.count(min(size, limit))
    if count is not None and count <= size:
        return sub.enumerate(), True
    raw = sub.sample(rng, size)
    if strategy != "uniform":
        base = sub.space
        out = []
        for c in raw:
            c = dict(c)
            for name in numeric:
                p = base[name]
                if name in sub.fixed or not getattr(p, "discrete", True):
                    continue
                c[name] = p.value_at(_biased_index(rng, p.cardinality, strategy))
            if not sub.is_valid(c):
                c = {**base.repair(c, rng), **sub.pinned}
                if not sub.is_valid(c):
                    continue
            out.append(c)
        raw = out
    seen: dict[str, dict[str, Any]] = {}
    for c in raw:
        seen.setdefault(sub.base.config_hash(c), c)
    return list(seen.values()), False
