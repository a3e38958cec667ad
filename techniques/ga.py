"""Generational genetic algorithm on DEAP operators, in the space's unit cube.

Holland, "Adaptation in Natural and Artificial Systems", 1975; Goldberg,
"Genetic Algorithms in Search, Optimization and Machine Learning", 1989.
Operators from DEAP (Fortin et al., JMLR 13, 2012): tournament selection,
simulated binary crossover (Deb & Agrawal, Complex Systems 9, 1995) and
polynomial mutation (Deb & Goyal 1996), both bounded to [0, 1]; one elite
survives each generation.  A generation is one batch (parallel-friendly).

DEAP draws from Python's module-level ``random``; to stay reproducible without
touching anybody's global state, every DEAP call runs inside
:func:`_private_random`, which swaps in this technique's own
``random.Random`` state and restores the caller's afterwards.
"""

from __future__ import annotations

import contextlib
import random
from collections.abc import Generator, Iterator
from typing import Any, ClassVar

import numpy as np

from techniques.base import SequentialTechnique, Step

__all__ = ["GA"]


@contextlib.contextmanager
def _private_random(own: random.Random) -> Iterator[None]:
    """Run DEAP's operators on ``own``'s state; leave the global ``random`` untouched."""
    saved = random.getstate()
    random.setstate(own.getstate())
    try:
        yield
    finally:
        own.setstate(random.getstate())
        random.setstate(saved)


class GA(SequentialTechnique):
    """Generational GA: tournament, SBX crossover, polynomial mutation, elitism 1."""

    name: ClassVar[str] = "GA"
    summary: ClassVar[str] = "generational GA on DEAP operators (SBX, polynomial mutation)"
    max_stall: ClassVar[int] = 60

    def __init__(self, *, seed: int | None = None, population: int = 24, crossover: float = 0.9,
                 eta: float = 10.0, tournament: int = 3, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        self.population = max(int(population), 4)
        self.crossover = float(crossover)
        self.eta = float(eta)
        self.tournament = int(tournament)

    def _on_bind(self) -> None:
        self._py_random = random.Random(int(self.rng.integers(2**63)))

    def _select(self, fit: np.ndarray, k: int) -> list[int]:
        picks = []
        for _ in range(k):
            cand = self.rng.choice(len(fit), size=min(self.tournament, len(fit)), replace=False)
            picks.append(int(cand[np.argmin(fit[cand])]))
        return picks

    def steps(self) -> Generator[Step, Any, None]:
        from deap import tools  # imported here: deap is only needed by this technique

        n = self.population
        pop = np.array([self.random_point() for _ in range(n)])
        if self.best_config is not None:
            pop[0] = self.encode(self.best_config)
        fit = np.asarray((yield [self.decode(x) for x in pop]), dtype=float)
        d = pop.shape[1]
        while True:
            parents = self._select(fit, n)
            children: list[list[float]] = [list(pop[i]) for i in parents]
            with _private_random(self._py_random):
                for i in range(0, n - 1, 2):
                    if random.random() < self.crossover:
                        tools.cxSimulatedBinaryBounded(children[i], children[i + 1], eta=self.eta, low=0.0, up=1.0)
                for child in children:
                    tools.mutPolynomialBounded(child, eta=self.eta, low=0.0, up=1.0, indpb=max(1.0 / d, 0.1))
            kids = np.clip(np.array(children, dtype=float), 0.0, 1.0)
            elite = int(np.argmin(fit))
            kids[0] = pop[elite]
            kfit = np.asarray((yield [self.decode(x) for x in kids[1:]]), dtype=float)
            pop = kids
            fit = np.concatenate([[fit[elite]], kfit])
