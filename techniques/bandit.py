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
                 window: int = 500, c: float = 0.05, **options: Any) -> None:
        super().__init__(seed=seed, arms=arms, **options)
        self.window, self.c = int(window), float(c)
        self.auc = AUCWindow(len(self.arms), self.window, self.c)

    def _reset_history(self) -> None:
        self.auc = AUCWindow(len(self.arms), self.window, self.c)

    def _pick(self, blocked: set[int]) -> int | None:
        best, best_score = None, -math.inf
        for i in self._tie_order(len(self.arms)):
            i = int(i)
            if i in blocked:
                continue
            s = self.auc.score(i)
            if best is None or s > best_score:
                best, best_score = i, s
        return best

    def _on_result(self, arm: int, credit: bool) -> None:
        self.auc.push(arm, credit)

    def scores(self) -> dict[str, float]:
        """Current score per arm label (for reports and debugging)."""
        return {label: self.auc.score(i) for i, label in enumerate(self.labels)}

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "uses": dict(zip(self.labels, self.auc.uses)),
                "credited": dict(zip(self.labels, self.auc.credited)),
                "window": self.window, "c": self.c}
