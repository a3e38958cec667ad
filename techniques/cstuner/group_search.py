"""Search one parameter group with the others fixed (csTuner's group-by-group GA).

The group's valid values are re-indexed first (Sun et al., CLUSTER 2021,
Figure 7): with the other parameters fixed at the best configuration so far,
only the values of each group parameter that occur in some valid combination
are kept, numbered 0..k-1, so the GA's genes never point at values that can
only produce invalid configurations.  A group with no more valid combinations
than the population is searched exhaustively; otherwise the GA runs until
approximate stopping settles it or the fixed budget (population x generations)
is spent.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from techniques.cstuner.ga import GenerationalGA, Genome
from techniques.cstuner.stopping import ApproximateStop

__all__ = ["GroupReport", "GroupSearch"]


@dataclass(frozen=True)
class GroupReport:
    """How a group search ended: evaluations used against the fixed budget."""

    group: tuple[str, ...]
    mode: str            # "ga" or "exhaustive"
    reason: str          # "cv" (approximate stopping), "budget", "exhaustive"
    evaluations: int     # distinct configurations the group needed
    budget: int          # population * generations (the fixed-budget GA)
    generations: int
    best_value: float

    @property
    def saved(self) -> int:
        """Evaluations not spent compared with running the full fixed budget."""
        return max(0, self.budget - self.evaluations)

    def to_json(self) -> dict[str, Any]:
        """JSON-able form for run_state and reports."""
        return {
            "group": list(self.group), "mode": self.mode, "reason": self.reason,
            "evaluations": self.evaluations, "budget": self.budget, "saved": self.saved,
            "generations": self.generations, "best_value": self.best_value,
        }


def _key(cfg: Mapping[str, Any], names: Sequence[str]) -> tuple[Any, ...]:
    return tuple(cfg[n] for n in names)


class GroupSearch:
    """Ask/tell search of ``group`` around ``base``; ``done`` when settled."""

    def __init__(
        self,
        group: Sequence[str],
        domains: Mapping[str, Sequence[Any]],
        base: Mapping[str, Any],
        is_valid: Callable[[dict[str, Any]], bool],
        rng: np.random.Generator,
        *,
        population: int = 20,
        generations: int = 10,
        stop: ApproximateStop | None = None,
        enumerate_limit: int = 100_000,
        known: Callable[[dict[str, Any]], float | None] | None = None,
    ) -> None:
        self.group = tuple(group)
        self.base = dict(base)
        self.is_valid = is_valid
        self.stop = stop or ApproximateStop()
        self.budget = population * generations
        self.max_generations = generations
        self.known = known
        self.values: dict[tuple[Any, ...], float] = {}
        self._proposed: set[tuple[Any, ...]] = set()
        self._report: GroupReport | None = None
        full = [list(domains[n]) for n in self.group]
        combos: list[tuple[Any, ...]] | None = None
        if math.prod(len(v) for v in full) <= enumerate_limit:
            combos = [c for c in itertools.product(*full) if is_valid(self._config(c))]
            if not combos:
                combos = [_key(self.base, self.group)]
            # Figure 7: keep only values used by some valid combination, re-indexed 0..k-1.
            full = [[v for v in vals if any(c[i] == v for c in combos)] for i, vals in enumerate(full)]
        self.domains = full
        self.ga: GenerationalGA | None = None
        self.exhaustive: list[tuple[Any, ...]] | None = None
        if combos is not None and len(combos) <= population:
            self.mode = "exhaustive"
            self.exhaustive = combos
        else:
            self.mode = "ga"
            start = self._genome(_key(self.base, self.group))
            self.ga = GenerationalGA(
                [len(v) for v in full], self._decode, rng, population=population,
                seeds=[start] if start is not None else [],
            )

    # -- encoding -----------------------------------------------------------
    def _config(self, combo: Sequence[Any]) -> dict[str, Any]:
        cfg = dict(self.base)
        cfg.update(zip(self.group, combo))
        return cfg

    def _genome(self, combo: Sequence[Any]) -> Genome | None:
        try:
            return tuple(self.domains[i].index(v) for i, v in enumerate(combo))
        except ValueError:
            return None

    def _decode(self, genome: Genome) -> dict[str, Any] | None:
        cfg = self._config([self.domains[i][j] for i, j in enumerate(genome)])
        return cfg if self.is_valid(cfg) else None

    # -- ask / tell ---------------------------------------------------------
    @property
    def done(self) -> bool:
        """True once the group is settled (or exhausted)."""
        return self._report is not None

    def ask(self, n: int) -> list[dict[str, Any]]:
        """Up to ``n`` configurations to measure; [] while waiting for results."""
        out: list[dict[str, Any]] = []
        for _ in range(10 * self.max_generations + 10):
            if len(out) >= n or self.done:
                break
            batch = self._candidates()
            if not batch:
                # A generation may be complete without a new result (bred only known
                # genomes): finish it here; stop when we are really waiting.
                if not self._maybe_finish_generation():
                    break
                continue
            fresh = []
            for combo in batch:
                cfg = self._config(combo)
                v = self.known(cfg) if self.known is not None else None
                if v is not None:
                    self._record(combo, v)
                else:
                    fresh.append(combo)
            if len(fresh) < len(batch):
                self._maybe_finish_generation()
                continue          # known answers may have completed a generation
            for combo in fresh[: n - len(out)]:
                self._proposed.add(combo)
                out.append(self._config(combo))
        return out

    def _candidates(self) -> list[tuple[Any, ...]]:
        if self.exhaustive is not None:
            pending = [c for c in self.exhaustive if c not in self.values and c not in self._proposed]
            return pending
        assert self.ga is not None
        pending = []
        for g in self.ga.unknown():
            combo = tuple(self.domains[i][j] for i, j in enumerate(g))
            if combo not in self._proposed:
                pending.append(combo)
        return pending

    def tell(self, config: Mapping[str, Any], value: float) -> None:
        """Record the result of a configuration this group proposed."""
        combo = _key(config, self.group)
        self._proposed.discard(combo)
        self._record(combo, value)
        self._maybe_finish_generation()

    def _record(self, combo: tuple[Any, ...], value: float) -> None:
        self.values[combo] = float(value)
        if self.ga is not None:
            g = self._genome(combo)
            if g is not None:
                self.ga.tell(g, value)

    def _maybe_finish_generation(self) -> bool:
        """Finish the generation if complete; True when that changed the state."""
        if self.done:
            return False
        if self.exhaustive is not None:
            if all(c in self.values for c in self.exhaustive):
                self._finish("exhaustive", 1)
                return True
            return False
        ga = self.ga
        assert ga is not None
        if not ga.generation_complete:
            return False
        gens = ga.generation + 1
        if self.stop.settled(list(self.values.values()), gens):
            self._finish("cv", gens)
        elif gens >= self.max_generations or len(self.values) >= self.budget:
            self._finish("budget", gens)
        else:
            ga.advance()
        return True

    def _finish(self, reason: str, generations: int) -> None:
        self._report = GroupReport(
            group=self.group, mode=self.mode, reason=reason, evaluations=len(self.values),
            budget=self.budget, generations=generations, best_value=self.best()[1],
        )

    # -- results ------------------------------------------------------------
    def best(self) -> tuple[dict[str, Any], float]:
        """Best configuration found in this group and its value."""
        if not self.values:
            return dict(self.base), math.inf
        combo, v = min(self.values.items(), key=lambda cv: cv[1])
        return self._config(combo), v

    def report(self) -> GroupReport | None:
        """The final report, once done."""
        return self._report
