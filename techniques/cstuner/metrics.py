"""csTuner metric combination: Pearson correlation (Eq. 2) and Algorithm 2.

Sun et al., IEEE CLUSTER 2021, Section IV-D.  Building a model for every GPU
metric Nsight reports is unrealistic, so metrics that move together are
combined: every metric pair gets the absolute Pearson correlation coefficient
over the performance dataset, the pairs go into a deque in ascending order,
and Algorithm 2 pops from the right (the most correlated pair first): two
metrics in no collection open one while fewer than ``num_collections``
exist, one already collected pulls its partner into its collection, two
collected ones are skipped.  From each collection the metric with the
highest |PCC| against the execution time is kept for performance modelling.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = ["algorithm2", "combine_metrics", "metric_deque", "pcc"]


def pcc(x: Sequence[float], y: Sequence[float]) -> float:
    """Eq. 2, the Pearson correlation coefficient; 0 when either side is constant."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    da, db = a - a.mean(), b - b.mean()
    den = math.sqrt(float((da * da).sum()) * float((db * db).sum()))
    return 0.0 if den == 0.0 else float((da * db).sum()) / den


def metric_deque(table: Mapping[str, Sequence[float]]) -> collections.deque[tuple[str, str]]:
    """Unordered metric pairs in ascending order of |PCC| (Algorithm 2's input)."""
    names = list(table)
    pairs = [((a, b), abs(pcc(table[a], table[b]))) for i, a in enumerate(names) for b in names[i + 1:]]
    pairs.sort(key=lambda kv: kv[1])
    return collections.deque(p for p, _ in pairs)


def algorithm2(dq: collections.deque[tuple[str, str]], num_collections: int) -> list[list[str]]:
    """Algorithm 2: metric collections from the deque (consumed), at most ``num_collections``."""
    if num_collections < 1:
        raise ValueError(f"num_collections={num_collections} must be >= 1 (how many metrics to model)")
    out: list[list[str]] = []
    where: dict[str, int] = {}
    for _ in range(len(dq)):
        a, b = dq.pop()
        if a not in where and b not in where:
            if len(out) < num_collections:
                out.append([a, b])
                where[a] = where[b] = len(out) - 1
            continue
        if a in where and b in where:
            continue
        if a in where:
            out[where[a]].append(b)
            where[b] = where[a]
        else:
            out[where[b]].append(a)
            where[a] = where[b]
    return out


def combine_metrics(table: Mapping[str, Sequence[float]], time: Sequence[float],
                    num_collections: int = 3) -> list[str]:
    """The representative metric of each collection: the highest |PCC| with ``time``.

    Constant metrics carry no information and are left out first; with a
    single usable metric it is its own representative (Algorithm 2 needs pairs).
    """
    usable = {k: list(v) for k, v in table.items() if len(set(v)) > 1}
    if not usable:
        return []
    if len(usable) == 1:
        return list(usable)
    collections_ = algorithm2(metric_deque(usable), num_collections)
    return [max(col, key=lambda m: (abs(pcc(usable[m], time)), m)) for col in collections_]
