"""Differential evolution (DE/rand/1/bin) in the space's unit cube.

Storn & Price, "Differential evolution - a simple and efficient heuristic
for global optimization over continuous spaces", J. Global Optim. 11, 1997:
mutant v = a + F (b - c), binomial crossover with rate CR, greedy one-to-one
selection.  F = 0.5 and CR = 0.9 are the values Storn & Price recommend as a
start.  One generation's trial vectors are one batch (parallel-friendly).
The first population includes the best configuration the ensemble knows.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np

from techniques.base import SequentialTechnique, Step

__all__ = ["DifferentialEvolution"]


class DifferentialEvolution(SequentialTechnique):
    """DE/rand/1/bin with generational batches."""

    name: ClassVar[str] = "DifferentialEvolution"
    summary: ClassVar[str] = "differential evolution DE/rand/1/bin (Storn & Price 1997)"
    max_stall: ClassVar[int] = 60

    def __init__(self, *, seed: int | None = None, population: int = 20, f: float = 0.5,
                 cr: float = 0.9, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        self.population = max(int(population), 4)
        self.f = float(f)
        self.cr = float(cr)

    def steps(self) -> Generator[Step, Any, None]:
        n = self.population
        pop = np.array([self.random_point() for _ in range(n)])
        if self.best_config is not None:
            pop[0] = self.encode(self.best_config)
        fit = np.asarray((yield [self.decode(x) for x in pop]), dtype=float)
        d = pop.shape[1]
        while True:
            trials = np.empty_like(pop)
            for i in range(n):
                a, b, c = self.rng.choice([j for j in range(n) if j != i], 3, replace=False)
                mutant = pop[a] + self.f * (pop[b] - pop[c])
                cross: np.ndarray = np.asarray(self.rng.random(d) < self.cr)
                cross[self.rng.integers(d)] = True
                trials[i] = np.clip(np.where(cross, mutant, pop[i]), 0.0, 1.0)
            tfit = np.asarray((yield [self.decode(x) for x in trials]), dtype=float)
            better = tfit <= fit
            pop[better], fit[better] = trials[better], tfit[better]
