"""Genetic algorithm on the space's index view (one gene per parameter).

GPU tuning spaces are small products of ordinal or categorical values under
constraints, not continuous boxes; Schoonhoven et al. ("Benchmarking
optimization algorithms for auto-tuning GPU kernels", IEEE TEVC 2022) found
a plain discrete GA among the strongest strategies there.  This one keeps a
gene per parameter (the value's index for discrete parameters, the value
itself for Float / LogFloat) and uses textbook settings:

* binary tournament selection (Goldberg & Deb, "A comparative analysis of
  selection schemes used in genetic algorithms", FOGA 1991);
* uniform crossover with probability 0.9 (Syswerda, ICGA 1989; the usual
  range 0.6-0.9 of Eiben & Smith, "Introduction to Evolutionary Computing",
  2nd ed. 2015, ch. 6);
* per-gene mutation with probability 1/d, d the number of parameters that
  have more than one value (Muehlenbein, PPSN 1992; Baeck, ICGA 1993): half
  the time a uniform re-draw, otherwise a step of +-j indices with
  P(j) = 2^-j, a two-sided geometric step (Rudolph, "An evolutionary
  algorithm for integer programming", PPSN 1994), so neighbouring values are
  tried most and +-2 sometimes; Float genes take a N(0, 0.1) step in the unit
  coordinate instead of the index step;
* elitism: by default (``survivors="plus"``) the next population is the
  best ``population`` of parents and children, the (mu + lambda) replacement
  of CHC (Eshelman, FOGA 1991); ``survivors="generational"`` keeps only the
  best parent (De Jong 1975) and replaces the rest by the children, and
  ``survivors="crowding"`` is deterministic crowding (Mahfoud, "Niching
  methods for genetic algorithms", 1995): random parent pairs, each child
  replaces the parent it resembles more (Hamming distance) when it is at
  least as good.  Measured on the replay benchmark
  (docs/bench_search_results.md, 10 seeds), "plus" scored 0.25-0.34,
  "generational" 0.11 and "crowding" 0.15;
* duplicate avoidance: a child that is invalid is repaired to the nearest
  valid configuration (``space.repair``), one that is already known (or already
  in this generation) is mutated again at one more gene, so the budget goes to
  new points; after 20 tries a random valid configuration takes its place;
* diversity: when the population has stopped changing, CHC's cataclysmic
  restart keeps the best and refills the population with copies of it
  mutated at rate 0.35 and with random valid configurations, half each
  (Eshelman 1991).  "Stopped" is CHC's rule in our terms: L/4 generations in
  a row in which no child entered the population (no child beat the best,
  for "generational"), L being the genome's length in bits,
  sum(log2 cardinality) (8 bits per Float gene);
* the ensemble's best (``observe_foreign``) replaces the worst member when it
  is better than the population's best (migration, as in island models);
* population size: 20 (Kernel Tuner's default, the setting benchmarked by
  Schoonhoven et al.), but at most a tenth of the budget, so that the GA gets
  about ten generations within it, and at least 4 (a tournament and a
  crossover need a few distinct parents).

Every generation is one batch, so parallel workers measure it at once.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np

from ensemble.errors import TechniqueError
from techniques.base import SequentialTechnique, Step

__all__ = ["DiscreteGA", "population_for_budget"]

#: Kernel Tuner's population (Schoonhoven et al. 2022 benchmarked it)
DEFAULT_POPULATION = 20
#: generations the budget should allow at least (population <= budget / this)
MIN_GENERATIONS = 10
#: smallest population with distinct parents for tournament and crossover
MIN_POPULATION = 4
#: CHC's divergence rate for the cataclysmic restart (Eshelman 1991)
CATACLYSM_RATE = 0.35
#: survivor selection schemes (see the module docstring)
SURVIVORS = ("plus", "generational", "crowding")
#: attempts to turn a known or invalid child into a new valid one
MAX_TRIES = 20


def population_for_budget(budget: int | None) -> int:
    """20, but at most budget / 10 (ten generations) and at least 4."""
    if budget is None:
        return DEFAULT_POPULATION
    return int(min(DEFAULT_POPULATION, max(MIN_POPULATION, budget // MIN_GENERATIONS)))


class DiscreteGA(SequentialTechnique):
    """Index-genome GA: binary tournament, uniform crossover, geometric/re-draw mutation."""

    name: ClassVar[str] = "DiscreteGA"
    summary: ClassVar[str] = "GA on parameter value indices: uniform crossover, neighbour/re-draw mutation, restarts"
    max_stall: ClassVar[int] = 60

    def __init__(self, *, seed: int | None = None, population: int | None = None, crossover: float = 0.9,
                 mutation: float | None = None, tournament: int = 2, survivors: str = "plus",
                 **options: Any) -> None:
        super().__init__(seed=seed, **options)
        if population is not None and int(population) < 2:
            raise TechniqueError(f"population must be >= 2 (got {population}); omit it for the budget rule")
        if not 0.0 <= float(crossover) <= 1.0:
            raise TechniqueError(f"crossover is a probability (got {crossover}); pass e.g. crossover=0.9")
        if mutation is not None and not 0.0 < float(mutation) <= 1.0:
            raise TechniqueError(f"mutation is a per-gene probability (got {mutation}); omit it for 1/d")
        if int(tournament) < 1:
            raise TechniqueError(f"tournament must be >= 1 (got {tournament}); pass e.g. tournament=2")
        if survivors not in SURVIVORS:
            raise TechniqueError(f"survivors must be one of {SURVIVORS} (got {survivors!r})")
        self.population_option = None if population is None else int(population)
        self.crossover = float(crossover)
        self.mutation_option = None if mutation is None else float(mutation)
        self.tournament = int(tournament)
        self.survivors = survivors
        self.population = DEFAULT_POPULATION
        self.cataclysms = 0

    def _on_bind(self) -> None:
        params = self.space.params
        self._params = params
        self._discrete = [bool(getattr(p, "discrete", True)) for p in params]
        self._cards = [int(p.cardinality) if d else 0 for p, d in zip(params, self._discrete)]
        # genes that can change: discrete with > 1 value, or continuous
        self._free = [i for i, (d, c) in enumerate(zip(self._discrete, self._cards)) if not d or c > 1]
        self.population = self.population_option or population_for_budget(self.budget)
        d = max(1, len(self._free))
        self.mutation = self.mutation_option if self.mutation_option is not None else 1.0 / d
        bits = sum(math.log2(c) if dsc else 8.0 for c, dsc in zip(self._cards, self._discrete) if not dsc or c > 1)
        self.patience = max(1, math.ceil(bits / 4))

    # -- genome <-> configuration --------------------------------------------
    def _genome(self, config: dict[str, Any]) -> list[Any]:
        return [p.index_of(config[p.name]) if d else float(config[p.name])
                for p, d in zip(self._params, self._discrete)]

    def _config(self, genome: list[Any]) -> dict[str, Any]:
        config = {p.name: (p.value_at(int(g)) if d else float(g))
                  for p, d, g in zip(self._params, self._discrete, genome)}
        if not self.space.is_valid(config):
            config = dict(self.space.repair(config, self.rng))
        return config

    # -- operators -------------------------------------------------------------
    def _mutate_gene(self, genome: list[Any], i: int, rate_redraw: float = 0.5) -> None:
        p = self._params[i]
        if not self._discrete[i]:
            u = p.to_unit(genome[i])[0]
            if self.rng.random() < rate_redraw:
                u = self.rng.random()
            else:
                u = min(1.0, max(0.0, u + 0.1 * self.rng.standard_normal()))
            genome[i] = float(p.from_unit([u]))
            return
        n = self._cards[i]
        if n < 2:
            return
        g = int(genome[i])
        if self.rng.random() < rate_redraw:
            new = int(self.rng.integers(n - 1))
            genome[i] = new + (new >= g)  # any other value, uniformly
            return
        step = int(self.rng.geometric(0.5))  # P(j) = 2^-j, j >= 1
        sign = 1 if self.rng.random() < 0.5 else -1
        new = g + sign * step
        if not 0 <= new < n:
            new = g - sign * step
        genome[i] = int(min(n - 1, max(0, new)))
        if genome[i] == g:  # clipped onto itself: take the nearest other value
            genome[i] = g + 1 if g + 1 < n else g - 1

    def _mutate(self, genome: list[Any], rate: float) -> list[Any]:
        out = list(genome)
        for i in self._free:
            if self.rng.random() < rate:
                self._mutate_gene(out, i)
        return out

    def _cross(self, a: list[Any], b: list[Any]) -> list[Any]:
        if self.rng.random() >= self.crossover:
            return list(a)
        mask = self.rng.random(len(a)) < 0.5
        return [x if m else y for x, y, m in zip(a, b, mask)]

    def _select(self, fit: np.ndarray) -> int:
        cand = self.rng.choice(len(fit), size=min(self.tournament, len(fit)), replace=False)
        return int(cand[np.argmin(fit[cand])])

    def _pairs(self, fit: np.ndarray) -> list[tuple[int, int]]:
        """Parents of the ``len(fit) - 1`` children: tournament winners, or random pairs for crowding."""
        k = len(fit) - 1
        if self.survivors != "crowding":
            return [(self._select(fit), self._select(fit)) for _ in range(k)]
        order = np.concatenate([self.rng.permutation(len(fit)) for _ in range(2 * k // len(fit) + 2)])
        return [(int(order[2 * i]), int(order[2 * i + 1])) for i in range(k)]

    @staticmethod
    def _distance(x: list[Any], y: list[Any]) -> int:
        return sum(a != b for a, b in zip(x, y))

    def _new_child(self, genome: list[Any], taken: set[str]) -> dict[str, Any]:
        """``genome`` as a valid configuration not in ``taken`` (re-mutated while it is)."""
        for _ in range(MAX_TRIES):
            config = self._config(genome)
            h = self.hash(config)
            if h not in taken and h not in self.known:
                taken.add(h)
                return config
            genome = self._genome(config)
            if self._free:
                self._mutate_gene(genome, int(self._free[int(self.rng.integers(len(self._free)))]))
        config = self.random_config()
        taken.add(self.hash(config))
        return config

    # -- the search --------------------------------------------------------------
    def _refill(self, count: int, taken: set[str], around: list[Any] | None) -> list[dict[str, Any]]:
        """``count`` new configurations: heavy mutations of ``around`` and random ones, half each."""
        out = []
        for k in range(count):
            if around is not None and k % 2 == 0:
                out.append(self._new_child(self._mutate(around, CATACLYSM_RATE), taken))
            else:
                out.append(self._new_child(self._genome(self.random_config()), taken))
        return out

    def steps(self) -> Generator[Step, Any, None]:
        n = self.population
        taken: set[str] = set()
        configs: list[dict[str, Any]] = []
        if self.best_config is not None and not self.escape:
            configs.append(dict(self.best_config))
            taken.add(self.hash(self.best_config))
        self.escape = False
        configs += self._refill(n - len(configs), taken, None)
        fit = np.asarray((yield configs), dtype=float)
        genomes = [self._genome(c) for c in configs]
        stagnant = 0
        while True:
            # migration: the ensemble's best joins when it beats the population
            if self.best_config is not None and self.best_value < float(fit.min()):
                worst = int(np.argmax(fit))
                configs[worst], genomes[worst] = dict(self.best_config), self._genome(self.best_config)
                fit[worst] = self.best_value
            elite = int(np.argmin(fit))
            taken = {self.hash(c) for c in configs}
            cataclysm = bool(self._free) and stagnant >= self.patience
            if cataclysm:
                self.cataclysms += 1
                stagnant = 0
                kids = self._refill(n - 1, taken, genomes[elite])
            else:
                pairs = self._pairs(fit)
                kids = [self._new_child(self._mutate(self._cross(genomes[a], genomes[b]), self.mutation), taken)
                        for a, b in pairs]
            kfit = np.asarray((yield kids), dtype=float)
            kgen = [self._genome(c) for c in kids]
            if self.survivors == "crowding" and not cataclysm:
                entered = False
                for (a, b), kid, kg, kf in zip(pairs, kids, kgen, kfit):
                    # the child competes with the parent it resembles more (Mahfoud 1995)
                    near = a if self._distance(kg, genomes[a]) <= self._distance(kg, genomes[b]) else b
                    if kf <= fit[near]:
                        configs[near], genomes[near], fit[near] = kid, kg, kf
                        entered = True
            elif self.survivors == "plus" and not cataclysm:
                allc, allg = configs + kids, genomes + kgen
                allf = np.concatenate([fit, kfit])
                order = np.argsort(allf, kind="stable")[:n]
                entered = bool((order >= len(configs)).any())
                configs, genomes, fit = [allc[i] for i in order], [allg[i] for i in order], allf[order]
            else:
                entered = bool(kfit.size) and float(kfit.min()) < float(fit[elite])
                configs = [configs[elite], *kids]
                genomes = [genomes[elite], *kgen]
                fit = np.concatenate([[fit[elite]], kfit])
            stagnant = 0 if entered or cataclysm else stagnant + 1
