"""The AUC bandit meta-technique (OpenTuner's credit assignment).

Ansel et al., "OpenTuner: an extensible framework for program autotuning",
PACT 2014, section 4 (and Fialho, Da Costa, Schoenauer & Sebag, "Analyzing
bandit-based adaptive operator selection", Ann. Math. Artif. Intell. 60,
2010, for area-under-curve credit).  Over a sliding window of the last ``W``
uses, arm i's uses in the window, oldest first, carry credits v_1..v_n
(1 = a novel request that improved the best so far; duplicates and failures
get 0).  Its score is

    AUC_i + C * sqrt(2 ln N / n_i),   AUC_i = 2 / (n (n + 1)) * sum_k k v_k

with N the window's length and n_i = n its uses in it (an unused arm scores
+inf so every arm is tried).  Recent credit weighs more (position k), and the
UCB1 term (Auer, Cesa-Bianchi & Fischer, Machine Learning 47, 2002) keeps
exploring.  :class:`AUCWindow` keeps the sums in O(1) per result;
:meth:`AUCWindow.score_direct` recomputes them from the window for tests.

Option ``startup`` (off by default; OpenTuner has no such phase): an arm
that declares a start-up phase, ``startup_trials`` > 0 after binding (e.g.
csTuner's random performance dataset, which its later search needs whole),
is asked before any other until it has proposed that many configurations,
and those results are kept out of the AUC window.  Why: a start-up phase is
not the arm's search; crediting it (random samples improve the best often
at first) or comparing it against the other arms' search would let the
bandit judge the arm before it has started, and sharing the budget during
it delays the phase the arm's search depends on.  With the option off the
bandit picks and credits exactly as before.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Sequence
from typing import Any, ClassVar

from ensemble.errors import TechniqueError
from ensemble.technique import Technique
from techniques.meta import MetaTechnique

__all__ = ["AUCBandit", "AUCWindow"]


class AUCWindow:
    """Sliding-window AUC scores with O(1) updates.

    For each arm: ``uses`` (its entries in the window), ``auc`` (the sum of
    the 1-based positions, among its own entries, of its credited ones) and
    ``credited`` (how many of its entries are credited).  Dropping an arm's
    oldest entry moves each of its other entries down one position, so
    ``auc`` falls by ``credited`` (the dropped one counted at position 1).
    """

    def __init__(self, arms: int, window: int, c: float) -> None:
        if window < 1:
            raise TechniqueError(f"window must be >= 1 (got {window}); pass e.g. window=500")
        if c < 0:
            raise TechniqueError(f"c (exploration constant) must be >= 0 (got {c}); pass e.g. c=0.05")
        self.window = int(window)
        self.c = float(c)
        self.history: deque[tuple[int, bool]] = deque()
        self.uses = [0] * arms
        self.auc = [0] * arms
        self.credited = [0] * arms

    def push(self, arm: int, credit: bool) -> None:
        self.history.append((arm, bool(credit)))
        self.uses[arm] += 1
        if credit:
            self.auc[arm] += self.uses[arm]
            self.credited[arm] += 1
        if len(self.history) > self.window:
            old, old_credit = self.history.popleft()
            self.auc[old] -= self.credited[old]
            if old_credit:
                self.credited[old] -= 1
            self.uses[old] -= 1

    def exploitation(self, arm: int) -> float:
        n = self.uses[arm]
        return 2.0 * self.auc[arm] / (n * (n + 1.0)) if n else 0.0

    def exploration(self, arm: int) -> float:
        n = self.uses[arm]
        if n == 0:
            return math.inf
        return math.sqrt(2.0 * math.log(len(self.history)) / n)

    def score(self, arm: int) -> float:
        return self.exploitation(arm) + self.c * self.exploration(arm)

    def score_direct(self, arm: int) -> float:
        """The same score summed from the window (slow path, for checking)."""
        credits = [c for a, c in self.history if a == arm]
        n = len(credits)
        if n == 0:
            return math.inf
        auc = 2.0 / (n * (n + 1.0)) * sum(k for k, c in enumerate(credits, start=1) if c)
        return auc + self.c * math.sqrt(2.0 * math.log(len(self.history)) / n)


class AUCBandit(MetaTechnique):
    """Pick the arm with the best sliding-window AUC credit plus a UCB exploration bonus."""

    name: ClassVar[str] = "AUCBandit"
    summary: ClassVar[str] = "AUC bandit over arms (OpenTuner, PACT 2014); window W, exploration C"

    def __init__(self, *, seed: int | None = None,
                 arms: Sequence[str | Technique] = ("NelderMead", "DifferentialEvolution", "GreedyMutation", "Random"),
                 window: int = 500, c: float = 0.05, startup: bool = False, **options: Any) -> None:
        super().__init__(seed=seed, arms=arms, **options)
        self.window, self.c = int(window), float(c)
        self.startup = bool(startup)
        self.auc = AUCWindow(len(self.arms), self.window, self.c)
        self._asked = [0] * len(self.arms)     # proposals per arm (start-up phase clock)
        self._told = [0] * len(self.arms)      # results per arm (start-up results are not credited)

    def _reset_history(self) -> None:
        self.auc = AUCWindow(len(self.arms), self.window, self.c)
        self._asked = [0] * len(self.arms)
        self._told = [0] * len(self.arms)

    def _startup_trials(self, arm: int) -> int:
        """The arm's declared start-up length (0 with the option off or none declared)."""
        if not self.startup:
            return 0
        try:
            return max(0, int(getattr(self.arms[arm], "startup_trials", 0) or 0))
        except (TypeError, ValueError):
            return 0

    def propose(self, n: int) -> list[dict[str, Any]]:
        out = super().propose(n)
        if self.startup:
            for config in out:
                queue = self._owner.get(self.hash(config))
                if queue and queue[-1] < len(self.arms):  # (not the fill technique's)
                    self._asked[queue[-1]] += 1
        return out

    def _pick(self, blocked: set[int]) -> int | None:
        if self.startup:
            for i in range(len(self.arms)):
                if i not in blocked and self._asked[i] < self._startup_trials(i):
                    return i
        best, best_score = None, -math.inf
        for i in self._tie_order(len(self.arms)):
            i = int(i)
            if i in blocked:
                continue
            s = self._arm_score(i)
            if best is None or s > best_score:
                best, best_score = i, s
        return best

    def _arm_score(self, arm: int) -> float:
        """The score ``_pick`` maximises: OpenTuner's AUC credit plus its exploration term.

        A subclass with another credit rule overrides this alone, so the
        start-up order, the blocking and the tie order stay one piece of code.
        """
        return float(self.auc.score(arm))

    def _on_result(self, arm: int, credit: bool) -> None:
        if self.startup:
            self._told[arm] += 1
            self._asked[arm] = max(self._asked[arm], self._told[arm])   # replayed on resume
            if self._told[arm] <= self._startup_trials(arm):
                return                      # a start-up result: not the arm's search, not credited
        self.auc.push(arm, credit)

    def scores(self) -> dict[str, float]:
        """Current score per arm label (for reports and debugging)."""
        return {label: self._arm_score(i) for i, label in enumerate(self.labels)}

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "uses": dict(zip(self.labels, self.auc.uses)),
                "credited": dict(zip(self.labels, self.auc.credited)),
                "window": self.window, "c": self.c,
                **({"startup": dict(zip(self.labels, self._asked))} if self.startup else {})}
