"""GA building blocks on index genomes: DEAP operators without global randomness.

DEAP's ``cxUniform`` and ``mutUniformInt`` (Fortin et al., JMLR 13, 2012)
draw from Python's global ``random`` module.  The house rule is one seeded
generator per object, so each call runs under a private seed taken from the
caller's ``numpy.random.Generator`` and the global state is restored after;
the lock keeps concurrent callers from interleaving.  Selection is ours:
rank-weighted sampling (better individuals are proportionally more likely),
which stays well defined for negative or infinite objective values.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import numpy as np

__all__ = ["bit_widths", "bits_to_genome", "cv_of", "flip_bit_mutation", "genome_to_bits",
           "rank_weighted_choice", "uniform_crossover", "uniform_mutation"]

_DEAP_LOCK = threading.Lock()
T = TypeVar("T")


def _seeded(rng: np.random.Generator, fn: Callable[..., T], *args: Any, **kw: Any) -> T:
    """Run a DEAP operator under a seed drawn from ``rng``; restore ``random`` after."""
    seed = int(rng.integers(0, 2**63 - 1))
    with _DEAP_LOCK:
        saved = random.getstate()
        random.seed(seed)
        try:
            return fn(*args, **kw)
        finally:
            random.setstate(saved)


def uniform_crossover(
    a: Sequence[int], b: Sequence[int], rng: np.random.Generator, indpb: float = 0.5
) -> tuple[list[int], list[int]]:
    """Two children by DEAP's uniform crossover (each gene swapped with ``indpb``)."""
    from deap import tools

    c1, c2 = list(a), list(b)
    _seeded(rng, tools.cxUniform, c1, c2, indpb)
    return c1, c2


def uniform_mutation(
    genome: Sequence[int], cardinalities: Sequence[int], rng: np.random.Generator, indpb: float
) -> list[int]:
    """DEAP's ``mutUniformInt``: each gene redrawn uniformly with probability ``indpb``."""
    from deap import tools

    child = list(genome)
    if not child:
        return child
    ups = [max(0, c - 1) for c in cardinalities]
    _seeded(rng, tools.mutUniformInt, child, [0] * len(child), ups, indpb)
    return child


def flip_bit_mutation(bits: Sequence[int], rng: np.random.Generator, indpb: float) -> list[int]:
    """DEAP's ``mutFlipBit``: each bit flipped with probability ``indpb`` (csTuner's mutation rate)."""
    from deap import tools

    child = list(bits)
    if not child:
        return child
    _seeded(rng, tools.mutFlipBit, child, indpb)
    return [int(b) for b in child]


def bit_widths(cardinalities: Sequence[int]) -> list[int]:
    """Bits per gene: enough for indices 0..c-1 (at least one bit, so a gene can move)."""
    return [max(1, int(c - 1).bit_length()) for c in cardinalities]


def genome_to_bits(genome: Sequence[int], widths: Sequence[int]) -> list[int]:
    """Concatenated big-endian binary form of each gene (csTuner stores genes in binary)."""
    out: list[int] = []
    for g, w in zip(genome, widths):
        out.extend((int(g) >> (w - 1 - k)) & 1 for k in range(w))
    return out


def bits_to_genome(bits: Sequence[int], widths: Sequence[int]) -> tuple[int, ...]:
    """Inverse of :func:`genome_to_bits`; an index may exceed its gene's range (caller rejects)."""
    out, pos = [], 0
    for w in widths:
        v = 0
        for b in bits[pos:pos + w]:
            v = (v << 1) | int(b)
        out.append(v)
        pos += w
    return tuple(out)


def rank_weighted_choice(
    values: Sequence[float], k: int, rng: np.random.Generator
) -> list[int]:
    """Indices of ``k`` parents, chosen with weight ``N - rank`` (lower value = better)."""
    n = len(values)
    if n == 0:
        return []
    order = sorted(range(n), key=lambda i: values[i])
    weights = np.empty(n)
    for rank, i in enumerate(order):
        weights[i] = n - rank
    weights /= weights.sum()
    return [int(i) for i in rng.choice(n, size=k, p=weights)]


def cv_of(values: Sequence[float]) -> float:
    """Coefficient of variation std/|mean| of finite values; 0 if constant, inf if undefined."""
    xs = np.asarray([v for v in values if np.isfinite(v)], dtype=float)
    if len(xs) < 2 or len(xs) < len(values):
        return float("inf")
    std = float(xs.std())
    if std == 0.0:
        return 0.0
    mean = float(xs.mean())
    return float("inf") if mean == 0.0 else std / abs(mean)
