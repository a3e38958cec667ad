"""Work-group size algebra of Cummins et al. (ADAPT 2016, Sections 3.1 and 4.1).

A work-group size is a pair ``w = (w_r, w_c)``.  Per scenario s the data are
``times[s]`` (legal w -> mean runtime t(s, w)), ``refused[s]`` (W_refused(s))
and ``w_max[s]`` (W_max(s)).  Names follow the paper:

* :func:`legal` is Eq. (1): ``w_r * w_c <= W_max(s)`` and not refused (the
  paper writes ``w < W_max(s)`` for "the size is within the maximum"; the
  maximum itself is a legal size in OpenCL, so we use ``<=``);
* :func:`oracle` is Eq. (3): Omega(s) = argmin_w t(s, w) over W_legal(s);
* :func:`performance` is p(s, w) = t(s, Omega(s)) / t(s, w), the fraction of
  the oracle's performance (Section 7's "performance" metric);
* :func:`w_safe` is Eq. (2): the sizes legal for every scenario;
* :func:`baseline` is Algorithm 1, line 6: the size of W_safe with the
  highest geometric mean of p(s, w) over the training scenarios.

Everything here takes plain Python containers: no scikit-learn, no OpenCL.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence

from ensemble.errors import ConfigurationError

__all__ = ["Size", "baseline", "legal", "oracle", "performance", "w_safe", "within_max"]

#: a work-group size (rows, columns)
Size = tuple[int, int]


def within_max(w: Size, w_max: int) -> bool:
    """The static constraint of Section 3.1: the size fits W_max(s)."""
    return w[0] >= 1 and w[1] >= 1 and w[0] * w[1] <= w_max


def legal(w: Size, w_max: int, refused: Iterable[Size]) -> bool:
    """Eq. (1): within the maximum and not refused."""
    return within_max(w, w_max) and tuple(w) not in set(refused)


def oracle(times: dict[Size, float]) -> Size:
    """Eq. (3): the measured size with the lowest runtime (ties: the smaller size, then rows)."""
    if not times:
        raise ConfigurationError("oracle(times={}): a scenario needs at least one legal measured size")
    return min(times, key=lambda w: (times[w], w[0] * w[1], w))


def performance(times: dict[Size, float], w: Size) -> float:
    """p(s, w) = t(s, Omega(s)) / t(s, w); 0 for a size with no legal measurement."""
    t = times.get(tuple(w))  # type: ignore[arg-type]
    if t is None or not t > 0:
        return 0.0
    return times[oracle(times)] / t


def w_safe(times: Sequence[dict[Size, float]]) -> set[Size]:
    """Eq. (2): the sizes legal (measured without refusal) in every scenario."""
    if not times:
        return set()
    safe = set(times[0])
    for t in times[1:]:
        safe &= set(t)
    return safe


def baseline(times: Sequence[dict[Size, float]]) -> Size:
    """Algorithm 1, line 6: argmax over W_safe of the geometric mean of p(s, w).

    Raises ``ConfigurationError`` when W_safe is empty (no size was legal in
    every training scenario), naming the fix.
    """
    safe = w_safe(times)
    if not safe:
        raise ConfigurationError("baseline(times=...): W_safe is empty (no work-group size is legal in every "
                                 "training scenario); train on scenarios that share at least one size")
    best: Size | None = None
    best_score = -math.inf
    for w in sorted(safe):
        score = sum(math.log(performance(t, w)) for t in times) / len(times)
        if score > best_score:
            best, best_score = w, score
    assert best is not None
    return best
