"""csTuner parameter grouping: pairwise CVs from the performance dataset, Algorithm 1.

Sun et al., "csTuner: Scalable Auto-tuning Framework for Complex Stencil
Computation on GPUs", IEEE CLUSTER 2021, Section IV-C.

* Correlation of an ordered pair (P_a, P_b): the other N-2 parameters are
  held at the dataset's best setting; for every setting of P_a that occurs in
  the dataset (settings absent from it are skipped), VS_ab collects the
  setting of P_b with the best performance; the CV of VS_ab (Eq. 1,
  population standard deviation over mean) measures the correlation, a
  higher CV meaning a lower correlation.  All A_N^2 ordered pairs are
  computed.  Numeric parameters enter on the log2 scale (Section IV-B);
  booleans and enumerations by their 1-based index.
* The pairs go into a double-ended queue in ascending order of CV and
  Algorithm 1 pops them alternately from the left (the strongest pairs: a new
  group for two ungrouped parameters, or the ungrouped one joins its
  partner's group) and from the right (the weakest pairs: each ungrouped
  parameter becomes a group of its own), until the deque is empty.

Where the paper's pseudo-code and its prose differ (which side is popped
first, and the lines 25-30 typo), we follow the prose; where a random
dataset cannot hold the N-2 others exactly at the best, we take the records
closest to it; both are listed in docs/CSTUNER.md ("Differences").

Everything here is pure: domains are ``{name: [values...]}`` and a dataset is
a sequence of ``(config, value)`` pairs with lower values better.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "algorithm1",
    "dataset_cvs",
    "pair_cv",
    "sorted_deque",
    "value_scale",
]

Record = tuple[Mapping[str, Any], float]


def _key(value: Any) -> Any:
    """Hashable form of a parameter value (permutations are lists)."""
    return tuple(value) if isinstance(value, list) else value


def value_scale(values: Sequence[Any]) -> dict[Any, float]:
    """The number each setting of a parameter stands for in a CV (Section IV-B).

    Positive numbers map to ``1 + log2(v / min)`` (the log2 scale, shifted so
    the smallest setting is 1: a CV needs a mean away from zero, and the
    paper's settings start at 1); other domains (booleans, enumerations,
    non-positive ranges) map to their 1-based index.
    """
    vals = list(values)
    numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
    if numeric and vals and min(vals) > 0:
        lo = float(min(vals))
        return {_key(v): 1.0 + math.log2(float(v) / lo) for v in vals}
    return {_key(v): float(i + 1) for i, v in enumerate(vals)}


def _cv(xs: Sequence[float]) -> float:
    """Eq. 1: population standard deviation over the mean; 0 for fewer than two values."""
    if len(xs) < 2:
        return 0.0
    mean = sum(xs) / len(xs)
    var = sum((x - mean) ** 2 for x in xs) / len(xs)
    if var <= 0.0:
        return 0.0
    return math.inf if mean == 0.0 else math.sqrt(var) / abs(mean)


def pair_cv(records: Sequence[Record], a: str, b: str, scale_b: Mapping[Any, float],
            best: Mapping[str, Any]) -> float:
    """CV of VS_ab: the best setting of ``b`` for each setting of ``a`` in the dataset.

    For each setting of ``a`` present, the records with that setting nearest
    to ``best`` on the other parameters (equal to it when the dataset holds
    such records) are compared and the ``b`` of the fastest one is taken.
    """
    others = [n for n in best if n not in (a, b)]
    chosen: dict[Any, tuple[int, float, float]] = {}   # a-setting -> (distance, value, b scaled)
    for cfg, val in records:
        if not math.isfinite(val):
            continue
        xb = scale_b.get(_key(cfg.get(b)))
        if xb is None:
            continue
        dist = sum(1 for n in others if _key(cfg.get(n)) != _key(best[n]))
        k = _key(cfg.get(a))
        old = chosen.get(k)
        if old is None or (dist, val) < (old[0], old[1]):
            chosen[k] = (dist, val, xb)
    return _cv([x for _, _, x in chosen.values()])


def dataset_cvs(domains: Mapping[str, Sequence[Any]], records: Sequence[Record]
                ) -> dict[tuple[str, str], float]:
    """CV of every ordered pair (a, b), a != b, from the dataset alone (A_N^2 values)."""
    finite = [(c, v) for c, v in records if math.isfinite(v)]
    if not finite:
        raise ValueError("records: no successful sample in the performance dataset; "
                         "every sample failed, so no parameter correlation can be computed")
    best = min(finite, key=lambda cv: cv[1])[0]
    names = list(domains)
    scales = {n: value_scale(domains[n]) for n in names}
    base = {n: best.get(n) for n in names}
    return {(a, b): pair_cv(finite, a, b, scales[b], base) for a in names for b in names if a != b}


def sorted_deque(cvs: Mapping[tuple[str, str], float], names: Sequence[str]
                 ) -> collections.deque[tuple[str, str]]:
    """The pairs in ascending order of CV (ties: parameter order), as Algorithm 1's input."""
    order = {n: i for i, n in enumerate(names)}
    items = sorted(cvs.items(), key=lambda kv: (kv[1], order[kv[0][0]], order[kv[0][1]]))
    return collections.deque(pair for pair, _ in items)


def algorithm1(dq: collections.deque[tuple[str, str]], names: Sequence[str] = ()) -> list[list[str]]:
    """Algorithm 1: parameter groups from the deque of pairs (ascending CV).

    Even steps pop the left end (the most correlated pair): two ungrouped
    parameters open a group, one ungrouped parameter joins its partner's
    group, two grouped ones are skipped.  Odd steps pop the right end (the
    least correlated pair): each ungrouped parameter becomes a group of its
    own.  ``names`` not in any pair (a one-parameter space) end as singletons.
    The deque is consumed.
    """
    groups: list[list[str]] = []
    where: dict[str, int] = {}
    for i in range(len(dq)):
        if i % 2 == 0:
            p, q = dq.popleft()
            if p in where and q in where:
                continue
            if p not in where and q not in where:
                groups.append([p, q])
                where[p] = where[q] = len(groups) - 1
            elif p in where:
                groups[where[p]].append(q)
                where[q] = where[p]
            else:
                groups[where[q]].append(p)
                where[p] = where[q]
        else:
            p, q = dq.pop()
            for n in (p, q):
                if n not in where:
                    groups.append([n])
                    where[n] = len(groups) - 1
    for n in names:
        if n not in where:
            groups.append([n])
            where[n] = len(groups) - 1
    return groups
