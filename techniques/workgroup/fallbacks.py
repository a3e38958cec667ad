"""Fallback handlers for refused or invalid classifier predictions (Cummins et al., Algorithm 1).

A classifier can predict a size that the new scenario does not allow: over
W_max(s) (Eq. 5) or refused at launch.  Section 4.1 lists three handlers that
pick again until a legal size is found:

* :func:`baseline_fallback` (Algorithm 1, lines 1-8): the baseline size, the
  best on average over W_safe, which is legal by construction;
* :func:`random_fallback` (lines 9-16): a random size from the candidates,
  i.e. the sizes known from prior observations that fit W_max(s) and are
  not known to be refused;
* :func:`nearest_neighbour_fallback` (lines 17-32): the candidate with the
  smallest Euclidean distance to the prediction,
  d = sqrt((c_r - w_r)^2 + (c_c - w_c)^2).

``is_legal(w)`` discovers refusals the way a program does, by trying: each
handler calls it for every size it proposes and adds a refused one to
W_refused(s), as the paper's loops do.  All return ``(w, tries)`` where
``tries`` counts the sizes tried after the first prediction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from techniques.workgroup.sizes import Size, within_max

__all__ = ["FALLBACKS", "NoLegalSizeError", "baseline_fallback", "candidates", "nearest_neighbour_fallback",
           "random_fallback"]


class NoLegalSizeError(RuntimeError):
    """Every candidate size was tried and refused."""


def candidates(pool: Iterable[Size], w_max: int, refused: set[Size]) -> list[Size]:
    """{w | w within W_max(s), w not in W_refused(s)} over the sizes seen in prior observations."""
    return sorted(w for w in set(pool) if within_max(w, w_max) and w not in refused)


def baseline_fallback(w: Size, *, is_legal: Callable[[Size], bool], w_max: int, pool: Iterable[Size],
                      base: Size, rng: np.random.Generator, refused: set[Size]) -> tuple[Size, int]:
    """Algorithm 1, BASELINE: keep ``w`` when legal, else the baseline size (legal by Eq. 2)."""
    if is_legal(w):
        return w, 0
    refused.add(w)
    if is_legal(base):
        return base, 1
    # the baseline is safe for the training scenarios only: on an unseen device it may not be
    refused.add(base)
    w2, n = nearest_neighbour_fallback(base, is_legal=is_legal, w_max=w_max, pool=pool, base=base, rng=rng,
                                       refused=refused)
    return w2, n + 1


def random_fallback(w: Size, *, is_legal: Callable[[Size], bool], w_max: int, pool: Iterable[Size],
                    base: Size, rng: np.random.Generator, refused: set[Size]) -> tuple[Size, int]:
    """Algorithm 1, RANDOM: draw from the candidates until a legal size comes up."""
    tries = 0
    pool = list(pool)
    while not is_legal(w):
        refused.add(w)
        cand = candidates(pool, w_max, refused)
        if not cand:
            raise NoLegalSizeError(f"random_fallback: every known size within W_max={w_max} was refused")
        w = cand[int(rng.integers(len(cand)))]
        tries += 1
    return w, tries


def nearest_neighbour_fallback(w: Size, *, is_legal: Callable[[Size], bool], w_max: int, pool: Iterable[Size],
                               base: Size, rng: np.random.Generator, refused: set[Size]) -> tuple[Size, int]:
    """Algorithm 1, NEARESTNEIGHBOUR: the closest candidate to the prediction (Euclidean, lines 20-28).

    Ties in distance go to the first candidate in (rows, columns) order, as
    the paper's strict ``d < d_min`` keeps the first one found.
    """
    tries = 0
    pool = list(pool)
    while not is_legal(w):
        refused.add(w)
        d_min, closest = np.inf, None
        for c in candidates(pool, w_max, refused):
            d = float(np.hypot(c[0] - w[0], c[1] - w[1]))  # w: the size just refused (line 23)
            if d < d_min:
                d_min, closest = d, c
        if closest is None:
            raise NoLegalSizeError(f"nearest_neighbour_fallback: every known size within W_max={w_max} was "
                                   "refused")
        w = closest
        tries += 1
    return w, tries


#: handler name -> function (the names used on the command line and in docs/CUMMINS.md)
FALLBACKS: dict[str, Callable[..., tuple[Size, int]]] = {
    "baseline": baseline_fallback, "random": random_fallback, "nearest": nearest_neighbour_fallback}
