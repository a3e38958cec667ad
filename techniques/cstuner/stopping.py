"""Approximate stopping for a group search (csTuner, Sun et al., CLUSTER 2021, Section IV-E).

A GA on one parameter group is settled when the best individuals it has found
agree: the coefficient of variation of the top-n fitness values falls below a
threshold.  Further generations would mostly re-measure variations of the
same plateau, so the next group starts and the saved evaluations go to it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from techniques.cstuner.operators import cv_of

__all__ = ["ApproximateStop", "top_n_cv"]


def top_n_cv(values: Sequence[float], n: int) -> float:
    """CV of the ``n`` lowest finite values (inf while fewer than ``n`` succeeded)."""
    finite = sorted(v for v in values if math.isfinite(v))
    if len(finite) < n:
        return float("inf")
    return cv_of(finite[:n])


@dataclass(frozen=True)
class ApproximateStop:
    """Settle a group when CV(top ``top_n`` values) < ``threshold``.

    The paper sets n and the threshold "empirically" without giving values;
    ours, top_n=10 and threshold=0.01 (1 %), are listed in docs/CSTUNER.md.
    ``min_generations`` stops a lucky first generation of near-identical
    values from settling a group at once.
    """

    top_n: int = 10
    threshold: float = 0.01
    min_generations: int = 2

    def __post_init__(self) -> None:
        if self.top_n < 2:
            raise ValueError(f"top_n={self.top_n}: a CV needs at least 2 values; use top_n >= 2")
        if self.threshold < 0:
            raise ValueError(f"threshold={self.threshold} must be >= 0 (0 disables early stopping)")

    def settled(self, values: Sequence[float], generations: int) -> bool:
        """Whether a group with these evaluated values after ``generations`` is settled."""
        if generations < self.min_generations:
            return False
        return top_n_cv(values, self.top_n) < self.threshold
