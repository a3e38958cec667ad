"""An ask/tell generational GA over index genomes: the one GA of CsTuner and IslandGA.

A genome is a tuple of value indices, one per gene.  Breeding runs on one of
two encodings: ``"binary"`` (csTuner, Sun et al. CLUSTER 2021, Section IV-E:
"genes are stored in binary for mutation"; DEAP's uniform crossover over the
bits and ``mutFlipBit``; a child whose index falls outside its gene's range
is rejected, so the re-indexed range of Fig. 7 is never left) or
``"integer"`` (DEAP's uniform crossover over whole genes and
``mutUniformInt``).  The binary form matters for csTuner's one gene per
group: with a single integer gene, uniform crossover could only copy a parent.  The owner supplies
``decode`` (genome -> config, or None when the config violates a constraint),
so the GA never hands out an invalid configuration.  The GA is driven from
outside: ``ask`` hands out individuals of the current generation that have no
fitness yet, ``tell`` records results, and when the whole generation is known
the owner decides (migrate, stop, ...) and calls ``advance`` to breed the next.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import numpy as np

from techniques.cstuner.operators import (
    bit_widths,
    bits_to_genome,
    flip_bit_mutation,
    genome_to_bits,
    rank_weighted_choice,
    uniform_crossover,
    uniform_mutation,
)

__all__ = ["GenerationalGA", "Genome"]

Genome = tuple[int, ...]


class GenerationalGA:
    """Uniform crossover + uniform mutation + rank-weighted selection with elitism."""

    def __init__(
        self,
        cardinalities: Sequence[int],
        decode: Callable[[Genome], dict[str, Any] | None],
        rng: np.random.Generator,
        *,
        population: int = 20,
        crossover_rate: float = 0.8,
        mutation_rate: float | None = None,
        elite: int = 1,
        max_tries: int = 50,
        seeds: Iterable[Genome] = (),
        encoding: str = "integer",
        clones: bool = False,
    ) -> None:
        if population < 2:
            raise ValueError(f"population={population} must be >= 2")
        if encoding not in ("integer", "binary"):
            raise ValueError(f"encoding={encoding!r}: use 'integer' or 'binary'")
        self.encoding = encoding
        self.cardinalities = [int(c) for c in cardinalities]
        self.decode = decode
        self.rng = rng
        self.size = population
        self.crossover_rate = crossover_rate
        self.widths = bit_widths(self.cardinalities)
        genes = sum(self.widths) if encoding == "binary" else len(self.cardinalities)
        self.mutation_rate = mutation_rate if mutation_rate is not None else 1.0 / max(1, genes)
        self.elite = elite
        self.max_tries = max_tries
        self.generation = 0
        # clones=True: DEAP's generational GA (csTuner's approximate stopping on the population):
        # a child may repeat a parent or a measured genome (a known one costs no measurement),
        # the population may hold copies, parents are drawn from it with their multiplicity, and
        # the fitness values of each completed generation are kept in ``completed``.
        self.clones = clones
        self.completed: dict[int, list[float]] = {}
        self.fitness: dict[Genome, float] = {}
        self.immigrants: list[Genome] = []
        self._proposed: set[Genome] = set()
        self.population: list[Genome] = self._initial(list(seeds))

    # -- construction -------------------------------------------------------
    def random_genome(self) -> Genome | None:
        """A uniformly drawn valid genome, or None after ``max_tries`` rejections."""
        for _ in range(self.max_tries):
            g = tuple(int(self.rng.integers(c)) for c in self.cardinalities)
            if self.decode(g) is not None:
                return g
        return None

    def _initial(self, seeds: list[Genome]) -> list[Genome]:
        pop: list[Genome] = []
        for g in seeds:
            g = tuple(int(x) for x in g)
            if g not in pop and self.decode(g) is not None:
                pop.append(g)
        misses = 0
        while len(pop) < self.size and misses < self.max_tries:
            drawn = self.random_genome()
            if drawn is None or drawn in pop:
                misses += 1
                continue
            pop.append(drawn)
        if not pop:
            raise ValueError("no valid genome found; the space's constraints reject every sample tried")
        return pop[: self.size]

    # -- ask / tell ---------------------------------------------------------
    def ask(self, n: int) -> list[Genome]:
        """Up to ``n`` individuals of this generation not yet handed out nor known."""
        out: list[Genome] = []
        for g in self.population:
            if len(out) >= n:
                break
            if g not in self.fitness and g not in self._proposed:
                self._proposed.add(g)
                out.append(g)
        return out

    def tell(self, genome: Genome, value: float) -> None:
        """Record the fitness (lower is better) of a genome."""
        self.fitness[tuple(genome)] = float(value)
        self._proposed.discard(tuple(genome))

    @property
    def generation_complete(self) -> bool:
        """True when every individual of the current generation has a fitness."""
        return all(g in self.fitness for g in self.population)

    def unknown(self) -> list[Genome]:
        """Individuals of this generation without a fitness (known ones need no measurement)."""
        return [g for g in self.population if g not in self.fitness]

    def best(self, k: int = 1, pool: Iterable[Genome] | None = None) -> list[tuple[Genome, float]]:
        """The ``k`` best evaluated genomes (of ``pool``, default: all history)."""
        items = (
            [(g, self.fitness[g]) for g in pool if g in self.fitness]
            if pool is not None
            else list(self.fitness.items())
        )
        return sorted(items, key=lambda gv: gv[1])[:k]

    def receive(self, genomes: Iterable[Genome]) -> None:
        """Immigrants (from neighbouring islands) join the next breeding pool."""
        for g in genomes:
            g = tuple(int(x) for x in g)
            if self.decode(g) is not None:
                self.immigrants.append(g)

    # -- breeding -----------------------------------------------------------
    def _in_range(self, g: Genome) -> bool:
        return all(0 <= x < c for x, c in zip(g, self.cardinalities))

    def _breed(self, pa: Genome, pb: Genome) -> list[Genome]:
        """Two children of ``pa`` and ``pb``: crossover with ``crossover_rate``, then mutation.

        Children outside the genes' ranges (binary encoding) are dropped.
        """
        if self.encoding == "binary":
            a, b = genome_to_bits(pa, self.widths), genome_to_bits(pb, self.widths)
            if self.rng.random() < self.crossover_rate:
                a, b = uniform_crossover(a, b, self.rng)
            kids = [bits_to_genome(flip_bit_mutation(x, self.rng, self.mutation_rate), self.widths)
                    for x in (a, b)]
            return [k for k in kids if self._in_range(k)]
        a2, b2 = list(pa), list(pb)
        if self.rng.random() < self.crossover_rate:
            a2, b2 = uniform_crossover(a2, b2, self.rng)
        return [tuple(uniform_mutation(x, self.cardinalities, self.rng, self.mutation_rate)) for x in (a2, b2)]

    def advance(self) -> None:
        """Breed the next generation from the current one plus immigrants."""
        if self.clones:
            self._advance_with_clones()
            return
        pool = list(dict.fromkeys(self.population + self.immigrants))
        values = [self.fitness.get(g, float("inf")) for g in pool]
        ranked = [g for _, g in sorted(zip(values, pool), key=lambda vg: vg[0])]
        nxt: list[Genome] = ranked[: self.elite]
        # Immigrants enter the population itself (replacing the worst), so they are
        # measured or looked up here: that is what makes the ring carry good genes.
        for g in self.immigrants:
            if g not in nxt and len(nxt) < self.size:
                nxt.append(g)
        self.immigrants = []
        tries = 0
        # Few unseen genomes left (a small re-indexed group): fewer breeding attempts, then
        # the known ones fill up; the owner notices the stall and moves on.
        unseen = math.prod(self.cardinalities) - len(self.fitness)
        limit = self.size * (self.max_tries if unseen > self.size else 4)
        while len(nxt) < self.size and tries < limit:
            tries += 1
            i, j = rank_weighted_choice(values, 2, self.rng)
            for c in self._breed(pool[i], pool[j]):
                novel = c not in self.fitness or tries > limit // 2
                if len(nxt) < self.size and c not in nxt and novel and self.decode(c) is not None:
                    nxt.append(c)
        while len(nxt) < self.size:
            drawn = self.random_genome()
            if drawn is None:
                break
            if drawn not in nxt:
                nxt.append(drawn)
            else:
                tries += 1
                if tries > self.size * self.max_tries * 2:
                    break
        self.population = nxt
        self.generation += 1

    def _advance_with_clones(self) -> None:
        """DEAP-style generation: selection with multiplicity, children kept even when known.

        Why (csTuner, Section IV-E): the paper's approximate stopping ends a
        group once the CV of the top-n fitness is below a threshold, i.e. once
        the population has converged.  A population that must consist of
        distinct, never-measured genomes cannot converge: in a group of a few
        hundred tuples its generations walk through the whole group.  Here a
        child that repeats a measured genome is looked up (no new
        measurement), so a converging population costs fewer measurements per
        generation and its top-n values agree.
        """
        self.completed[self.generation + 1] = [self.fitness.get(g, float("inf")) for g in self.population]
        pool = self.population + [g for g in self.immigrants if g not in self.population]
        values = [self.fitness.get(g, float("inf")) for g in pool]
        order = sorted(range(len(pool)), key=lambda i: values[i])
        nxt: list[Genome] = [pool[i] for i in order[: self.elite]]
        for g in self.immigrants:
            if g not in nxt and len(nxt) < self.size:
                nxt.append(g)
        self.immigrants = []
        tries = 0
        while len(nxt) < self.size and tries < self.size * self.max_tries:
            tries += 1
            i, j = rank_weighted_choice(values, 2, self.rng)
            for c in self._breed(pool[i], pool[j]):
                if len(nxt) < self.size and self.decode(c) is not None:
                    nxt.append(c)
        while len(nxt) < self.size:
            nxt.append(pool[order[0]])     # every child out of range: the best fills up
        self.population = nxt
        self.generation += 1
