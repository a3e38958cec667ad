"""Round-robin meta-technique: ask the arms in turn.

The non-adaptive baseline for the AUC bandit (the "round robin" ensemble of
OpenTuner, Ansel et al., PACT 2014): each proposal slot goes to the next arm
in a fixed cycle; an arm that has nothing to propose right now (waiting for
results) or is done is skipped.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ensemble.technique import Technique
from techniques.meta import MetaTechnique

__all__ = ["RoundRobin"]


class RoundRobin(MetaTechnique):
    """Cycle through the arms, one proposal each."""

    name: ClassVar[str] = "RoundRobin"
    summary: ClassVar[str] = "ask each arm in turn (non-adaptive ensemble baseline)"

    def __init__(self, *, seed: int | None = None,
                 arms: Sequence[str | Technique] = ("NelderMead", "DifferentialEvolution", "GreedyMutation", "Random"),
                 **options: Any) -> None:
        super().__init__(seed=seed, arms=arms, **options)
        self._next = 0

    def _pick(self, blocked: set[int]) -> int | None:
        k = len(self.arms)
        for step in range(k):
            i = (self._next + step) % k
            if i not in blocked:
                self._next = (i + 1) % k
                return i
        return None
