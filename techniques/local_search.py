"""Greedy iterated local search in the space's index view.

Iterated local search (Lourenco, Martin & Stuetzle, "Iterated local search",
Handbook of Metaheuristics, 2003): first-improvement hill climbing over
``space.neighbours`` (one parameter one index step away, or one adjacent swap
of a permutation; all valid), and at a local optimum a perturbation
(``space.mutate`` of the incumbent) before climbing again.  This is the family
that Schoonhoven et al. ("Benchmarking optimization algorithms for
auto-tuning GPU kernels", IEEE TEVC 2022) found strong on GPU tuning spaces
(Kernel Tuner's greedy_ils).  Neighbours already measured are answered
locally, so a climb pays only for new points.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, ClassVar

from techniques.base import SequentialTechnique, Step

__all__ = ["GreedyILS"]


class GreedyILS(SequentialTechnique):
    """First-improvement hill climbing on index neighbours, perturb at local optima."""

    name: ClassVar[str] = "GreedyILS"
    summary: ClassVar[str] = "greedy iterated local search on index neighbours (Lourenco et al. 2003)"

    def __init__(self, *, seed: int | None = None, perturbation: float = 0.3, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        self.perturbation = float(perturbation)

    def steps(self) -> Generator[Step, Any, None]:
        if self.escape or self.best_config is None:
            self.escape = False
            current = self.random_config()
        else:
            current = dict(self.best_config)
        fc = float((yield current))
        while True:
            improved = True
            while improved:
                improved = False
                for cand in self.space.neighbours(current, self.rng):
                    fv = float((yield dict(cand)))
                    if fv < fc:
                        current, fc, improved = dict(cand), fv, True
                        break
            # local optimum: perturb the best known point and climb again
            base = self.best_config if self.best_config is not None else current
            current = dict(self.space.mutate(base, self.rng, self.perturbation))
            fc = float((yield current))
