"""The paper's reference approaches (Garvey & Abdelrahman 2018, Sec. 8.1).

* ``GarveyRand`` (Rand): 1000 configurations drawn at random from the whole
  space, the best one kept (Sec. 5.1 chose 1000 as the plateau of the best
  sample).  Our ``Random`` without replacement, stopped after ``samples``.
* ``ExpS`` (expert search): every configuration of the subset an expert
  would keep, exhaustively: ``VX <= 4``, ``WX >= 32``, ``WY * CY <= 4``,
  ``WZ * CZ <= 4``.  The rules name the paper's parameters; ``names`` maps
  them onto the space's (default: the stencil app's ``wgx``, ``vx``, ...).
  The order is a seeded shuffle (the paper's is not stated; an exhaustive
  search ends at the same best whatever the order).  On a space without
  those parameters the rules do not apply and the subset is the whole space
  (enumerated when it has at most ``limit`` points, else sampled at random).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from ensemble.errors import TechniqueError
from techniques.base import BaseTechnique
from techniques.random_search import Random

__all__ = ["EXPERT_RULES", "ExpS", "GarveyRand"]

#: Sec. 8.1 (ii), in the paper's names
EXPERT_RULES = ("VX <= 4", "WX >= 32", "WY * CY <= 4", "WZ * CZ <= 4")
_STENCIL_NAMES = {"VX": "vx", "WX": "wgx", "WY": "wgy", "WZ": "wgz", "CY": "cmy", "CZ": "cmz"}


class GarveyRand(Random):
    """Rand: ``samples`` (1000) random valid configurations, without replacement, then done."""

    name: ClassVar[str] = "GarveyRand"
    summary: ClassVar[str] = "Garvey & Abdelrahman's Rand reference: 1000 random configurations, best kept"

    def __init__(self, *, seed: int | None = None, samples: int = 1000, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        if int(samples) < 1:
            raise TechniqueError(f"GarveyRand: samples={samples} must be >= 1 (the paper uses 1000)")
        self.samples = int(samples)
        self._sampled = 0

    def _on_bind(self) -> None:
        super()._on_bind()
        self._sampled = 0

    def propose(self, n: int) -> list[dict[str, Any]]:
        out = super().propose(min(n, self.samples - self._sampled))
        self._sampled += len(out)
        if self._sampled >= self.samples:
            self._exhausted = True
        return out


def _expert_ok(c: Mapping[str, Any], names: Mapping[str, str]) -> bool:
    v = {k: c[s] for k, s in names.items()}
    return v["VX"] <= 4 and v["WX"] >= 32 and v["WY"] * v["CY"] <= 4 and v["WZ"] * v["CZ"] <= 4


class ExpS(BaseTechnique):
    """Expert search: the whole expert-restricted subset of the space, each configuration once."""

    name: ClassVar[str] = "ExpS"
    summary: ClassVar[str] = "Garvey & Abdelrahman's expert search: exhaustive over VX<=4, WX>=32, WY*CY<=4, WZ*CZ<=4"

    def __init__(self, *, seed: int | None = None, names: Mapping[str, str] | None = None, limit: int = 200_000,
                 rules: bool = True, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        self.names = dict(names or _STENCIL_NAMES)
        #: False: the whole space, exhaustively (the true optimum of a small space: the exhaustive oracle)
        self.rules = rules
        self.limit = int(limit)
        self._order: list[dict[str, Any]] | None = None
        self._random: Random | None = None

    def _on_bind(self) -> None:
        self._order = None
        self._random = None
        rules = self.rules and set(self.names.values()) <= set(self.space.names)
        count = self.space.count_valid(limit=self.limit)
        if count is None or count > self.limit:
            if rules or not self.rules:
                raise TechniqueError(f"ExpS: the space has more than limit={self.limit} valid configurations; "
                                     "raise limit= or use a smaller array size")
            self._random = Random()
            self._random.bind(self.space, budget=self.budget, rng=self.rng)
            return
        keep = [dict(c) for c in self.space.enumerate_valid(limit=self.limit)
                if not rules or _expert_ok(c, self.names)]
        self._order = [keep[i] for i in self.rng.permutation(len(keep))]

    def subset_size(self) -> int | None:
        """How many configurations the expert subset has (None: not enumerated)."""
        return None if self._order is None else len(self._order) + self.evaluations

    def propose(self, n: int) -> list[dict[str, Any]]:
        self._require_bound()
        if self._random is not None:
            return self._random.propose(n)
        assert self._order is not None
        out: list[dict[str, Any]] = []
        while self._order and len(out) < n:
            c = self._order.pop()
            if self.hash(c) not in self.known:
                out.append(c)
        if not self._order:
            self._exhausted = True
        return out

    def _observe(self, trial: Any) -> None:
        if self._random is not None:
            self._random.observe(trial)
