"""Search one parameter group with the others fixed: csTuner's Fig. 7 step.

Sun et al., IEEE CLUSTER 2021, Section IV-E.  The group's valid tuples are
the distinct settings of its parameters in the sampled search space that
form a valid configuration with the other parameters at the best so far;
sorted ascending and re-indexed 0..K-1 (Fig. 7), one gene indexes them, so
the GA never proposes an invalid tuple.  K no larger than the population:
exhaustive search (Section V-A2).  Otherwise the island GA of
:mod:`techniques.island_ga` (sub-populations on a ring, binary genes, uniform
crossover, bit-flip mutation) runs until the CV of the top-n fitness values
falls below the threshold (approximate stopping), a generation limit is
reached, its islands stall on known tuples, or (``stagnation`` k, used by the
joint grouped GA) k generations pass without a new best.

Why a stagnation rule: the paper's approximate stopping ends a group whose
top-n values agree.  On a plateau of a rugged space (values of the top n
that never agree to 1 %) it never fires, and a GA held in one basin runs to
its generation limit.  The selection here is linear ranking with weights
N - rank (the best gets about twice the mean weight); its takeover time,
the generations a best individual needs to fill a sub-population of N under
selection alone, is about log2 N + log2 ln N (Goldberg & Deb, "A
comparative analysis of selection schemes used in genetic algorithms",
FOGA 1991).  After that many generations without a new best, the
sub-population is copies of one basin and only mutation (0.005 per bit)
adds anything new: the search has stalled there.  :func:`takeover_generations`
gives k from the population, not from any benchmark.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from techniques.cstuner.ga import Genome
from techniques.cstuner.stopping import ApproximateStop

__all__ = ["GroupReport", "GroupSearch", "takeover_generations"]


@dataclass(frozen=True)
class GroupReport:
    """How a group search ended."""

    group: tuple[str, ...]
    mode: str            # "ga" or "exhaustive"
    reason: str          # "cv" (approximate stopping), "generations", "stalled", "stagnant", "exhaustive", "budget"
    tuples: int          # K, the group's re-indexed valid tuples
    evaluations: int     # tuples with a value when it ended
    generations: int
    best_value: float

    def to_json(self) -> dict[str, Any]:
        """JSON-able form for run_state and reports."""
        return {"group": list(self.group), "mode": self.mode, "reason": self.reason, "tuples": self.tuples,
                "evaluations": self.evaluations, "generations": self.generations,
                "best_value": self.best_value}


def takeover_generations(population: int) -> int:
    """Takeover time of linear ranking (s = 2) in a sub-population of ``population``.

    ceil(log2 N + log2 ln N) (Goldberg & Deb 1991): 6 for the paper's 16.
    """
    n = max(3, int(population))
    return max(1, math.ceil(math.log2(n) + math.log2(math.log(n))))


def _key(v: Any) -> Any:
    return tuple(v) if isinstance(v, list) else v


def _order(v: Any) -> tuple[Any, ...]:
    """A sort key for values of mixed types.

    Why: a parameter's levels may mix ``None`` ("option not given", as in the
    HLS flag spaces) with numbers or strings, which Python refuses to compare.
    """
    if v is None:
        return (0, 0)
    if isinstance(v, (bool, int, float, np.integer, np.floating)):
        return (1, float(v))
    if isinstance(v, str):
        return (2, v)
    if isinstance(v, (list, tuple)):
        return (3, tuple(_order(x) for x in v))
    return (4, repr(v))


class GroupSearch:
    """Ask/tell search of ``group`` over its re-indexed ``tuples`` around ``base``."""

    def __init__(
        self,
        group: Sequence[str] | Sequence[Sequence[str]],
        tuples: Sequence[tuple[Any, ...]] | Sequence[Sequence[tuple[Any, ...]]],
        base: Mapping[str, Any],
        rng: np.random.Generator,
        *,
        population: int = 16,
        islands: Sequence[int] = (0, 1),
        n_islands: int = 2,
        transport: Any = None,
        crossover_rate: float = 0.8,
        mutation_rate: float = 0.005,
        migration_interval: int = 1,
        migrants: int = 2,
        stop: ApproximateStop | None = None,
        max_generations: int = 50,
        known: Callable[[dict[str, Any]], float | None] | None = None,
        is_valid: Callable[[dict[str, Any]], bool] | None = None,
        seeds: Sequence[Mapping[str, Any]] = (),
        stagnation: int | None = None,
        seed_base: bool = True,
        limit: int | None = None,
        approximate: str = "distinct",
    ) -> None:
        """One group (``group`` a list of names, ``tuples`` its tuples) or several at once.

        Several groups (``group`` a list of groups, ``tuples`` one list per
        group) give the grouped GA with one gene per group; ``is_valid``
        then rejects combinations that break a constraint.  ``stagnation``
        (None: off) ends the GA after that many generations without a new
        best (module docstring).  ``seed_base`` False leaves ``base`` out of
        the first generation (a restart away from the incumbent).
        ``limit`` (None: none) ends the search once it has asked for that
        many new evaluations (reason "budget"); an exhaustive search under a
        limit smaller than its tuples visits them in random order, so the
        ones it reaches are a random sample of the group, not its smallest
        indices (CsTuner's budget share, docs/CSTUNER.md difference 16).
        ``approximate`` says whose top-n fitness the approximate stop reads:
        "distinct" (the n best distinct tuples measured in this search so
        far) or "population" (the paper's GA: the n best individuals of a
        completed generation of the sub-populations, copies included; the
        GA then keeps copies and known children, :meth:`GenerationalGA._advance_with_clones`).
        """
        from techniques.island_ga import IslandModel, LocalRing

        if group and not isinstance(group[0], str):
            self.groups = [tuple(g) for g in group]
            lists = [list(t) for t in tuples]
        else:
            self.groups = [tuple(group)]   # type: ignore[arg-type]
            lists = [list(tuples)]
        self.group = tuple(n for g in self.groups for n in g)
        self.base = dict(base)
        self.is_valid = is_valid
        self.tuples: list[list[tuple[Any, ...]]] = []
        for g, ts in zip(self.groups, lists):
            uniq = sorted({tuple(_key(v) for v in t): tuple(t) for t in ts}.values(),
                          key=lambda t: tuple(_order(v) for v in t))
            self.tuples.append(uniq or [tuple(self.base[n] for n in g)])
        self.index = [{tuple(_key(v) for v in t): i for i, t in enumerate(ts)} for ts in self.tuples]
        self.stop = stop or ApproximateStop()
        self.max_generations = max_generations
        if stagnation is not None and stagnation < 1:
            raise ValueError(f"stagnation={stagnation}: give generations >= 1, or None to turn it off")
        self.stagnation = stagnation
        self._best_value = math.inf
        self._best_generation = 0
        self.known = known
        self.values: dict[Genome, float] = {}
        self._report: GroupReport | None = None
        self.model: Any = None
        self._pending: dict[Genome, list[tuple[int, Genome]]] = {}
        self.size = math.prod(len(t) for t in self.tuples)
        if approximate not in ("distinct", "population"):
            raise ValueError(f"approximate={approximate!r}: use 'distinct' or 'population'")
        self.approximate = approximate
        self._stop_checked = 0
        if limit is not None and limit < 1:
            raise ValueError(f"limit={limit}: give new evaluations >= 1, or None for no limit")
        self.limit = limit
        self.asked = 0
        if len(self.groups) == 1 and self.size <= population:
            self.mode = "exhaustive"
            self._todo: list[Genome] = [(i,) for i in range(self.size)]
            if limit is not None and limit < self.size:
                self._todo = [self._todo[int(i)] for i in rng.permutation(self.size)]
        else:
            self.mode = "ga"
            self._todo = []
            firsts = [self.base, *seeds] if seed_base else list(seeds)
            starts = [g for g in (self.genome(c) for c in firsts) if g is not None]
            self.wire = "|".join("+".join(g) for g in self.groups)
            self.model = IslandModel(
                [len(t) for t in self.tuples], self._decode, rng,
                island_ids=list(islands), n_islands=n_islands, transport=transport or LocalRing(),
                population=population, migration_interval=migration_interval, migrants=migrants,
                seeds={i: starts[:population] for i in islands} if starts else {},
                encoding="binary", crossover_rate=crossover_rate, mutation_rate=mutation_rate,
                to_wire=lambda g: [self.wire, [list(self.tuples[k][x]) for k, x in enumerate(g)]],
                from_wire=self._from_wire,
            )
            if approximate == "population":
                for ga in self.model.islands.values():
                    ga.clones = True

    def genome(self, cfg: Mapping[str, Any]) -> Genome | None:
        """The genome of a configuration's group tuples, or None when one is not indexed."""
        out = []
        for g, idx in zip(self.groups, self.index):
            i = idx.get(tuple(_key(cfg.get(n)) for n in g))
            if i is None:
                return None
            out.append(i)
        return tuple(out)

    def _decode(self, g: Genome) -> Genome | None:
        if any(not 0 <= x < len(t) for x, t in zip(g, self.tuples)):
            return None
        if self.is_valid is not None and len(self.groups) > 1 and not self.is_valid(self.config(g)):
            return None
        return g

    def _from_wire(self, w: Any) -> Genome | None:
        """A migrant's tuples, placed in this rank's re-indexing; None when one is not there."""
        if not isinstance(w, list) or len(w) != 2 or w[0] != self.wire or len(w[1]) != len(self.groups):
            return None
        out = []
        for idx, t in zip(self.index, w[1]):
            i = idx.get(tuple(_key(v) for v in t))
            if i is None:
                return None
            out.append(i)
        return tuple(out)

    def config(self, genome: Genome) -> dict[str, Any]:
        cfg = dict(self.base)
        for g, ts, x in zip(self.groups, self.tuples, genome):
            cfg.update(zip(g, ts[x]))
        return cfg

    # -- ask / tell ---------------------------------------------------------
    @property
    def done(self) -> bool:
        return self._report is not None

    def ask(self, n: int) -> list[tuple[Genome, dict[str, Any]]]:
        """Up to ``n`` (genome, config) to measure; known ones are answered on the spot."""
        out: list[tuple[Genome, dict[str, Any]]] = []
        if self.done:
            return out
        if self.limit is not None:
            n = min(n, self.limit - self.asked)
            if n <= 0:
                self._check()                  # ends once the asked evaluations are told
                return out
        if self.mode == "exhaustive":
            while self._todo and len(out) < n:
                i = self._todo.pop(0)
                if not self._answer(i, None):
                    out.append((i, self.config(i)))
            self.asked += len(out)
            self._check()
            return out
        for _ in range(50 * max(1, n)):
            if len(out) >= n or self.done:
                break
            picked = self.model.ask(n - len(out))
            if not picked:
                break
            for island, genome in picked:
                i = tuple(genome)
                if self._answer(i, (island, genome)):
                    continue
                waiting = self._pending.setdefault(i, [])
                waiting.append((island, genome))
                if len(waiting) == 1:
                    out.append((i, self.config(i)))
            self._check()
        self.asked += len(out)
        if not out and not self._pending and not self.done:
            # every island breeds only known tuples: nothing new to learn in this group
            self._finish("stalled", min(ga.generation for ga in self.model.islands.values()))
        return out

    def _answer(self, i: Genome, owner: tuple[int, Genome] | None) -> bool:
        """Tell a tuple whose value is known already (in this group or in the run)."""
        v = self.values.get(i)
        if v is None and self.known is not None:
            v = self.known(self.config(i))
            if v is not None:
                self.values[i] = v
        if v is None:
            return False
        self._note(v)
        if owner is not None:
            self.model.tell(owner[0], owner[1], v)
        return True

    def tell(self, index: Genome, value: float) -> None:
        v = float(value) if math.isfinite(value) else math.inf
        self.values[index] = v
        self._note(v)
        for island, genome in self._pending.pop(index, []):
            self.model.tell(island, genome, v)
        self._check()

    def _generations(self) -> int:
        return min(ga.generation for ga in self.model.islands.values()) if self.model is not None else 0

    def _note(self, value: float) -> None:
        """Remember the generation of the last new best (the stagnation rule's clock)."""
        if value < self._best_value:
            self._best_value = value
            self._best_generation = self._generations()

    def pending(self) -> bool:
        return bool(self._pending)

    def _check(self) -> None:
        if self.done:
            return
        if self.limit is not None and self.asked >= self.limit and not self._pending \
                and all(i in self.values for i in self._asked_exhaustive()):
            self._finish("budget", self._generations())
            return
        if self.mode == "exhaustive":
            if not self._todo and all((i,) in self.values for i in range(self.size)):
                self._finish("exhaustive", 1)
            return
        gens = min(ga.generation for ga in self.model.islands.values())
        if self.approximate == "population":
            settled = self._population_settled(gens)
        else:
            settled = self.stop.settled(list(self.values.values()), gens)
        if settled:
            self._finish("cv", gens)
        elif gens >= self.max_generations:
            self._finish("generations", gens)
        elif self.stagnation is not None and gens - self._best_generation >= self.stagnation:
            self._finish("stagnant", gens)
        elif (self.model.stalled == set(self.model.islands) and not self._pending) or len(self.values) >= self.size:
            self._finish("stalled", gens)

    def _population_settled(self, gens: int) -> bool:
        """Whether a generation completed by every sub-population since the last check has CV(top-n) < threshold.

        The top-n of the individuals of that generation on all of this
        process's islands, copies included (the paper's "CV of top-n
        fitness" of the GA's population).
        """
        for g in range(self._stop_checked + 1, gens + 1):
            values = [v for ga in self.model.islands.values() for v in ga.completed.get(g, [])]
            if self.stop.settled(values, g):
                self._stop_checked = gens
                return True
        self._stop_checked = max(self._stop_checked, gens)
        return False

    def _asked_exhaustive(self) -> list[Genome]:
        """Exhaustive tuples asked for and not yet told (none in GA mode: those are ``_pending``)."""
        if self.mode != "exhaustive":
            return []
        todo = set(self._todo)
        return [(i,) for i in range(self.size) if (i,) not in todo]

    def _finish(self, reason: str, generations: int) -> None:
        self._report = GroupReport(self.group, self.mode, reason, self.size, len(self.values),
                                   generations, self.best()[1])

    def best(self) -> tuple[dict[str, Any], float]:
        """Best configuration found in this group and its value."""
        if not self.values:
            return dict(self.base), math.inf
        i, v = min(self.values.items(), key=lambda iv: (iv[1], iv[0]))
        return self.config(i), v

    def report(self) -> GroupReport | None:
        return self._report
