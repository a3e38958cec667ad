"""A technique wrapper that keeps the simulated clock of a replayed run.

Why: a replay answers in microseconds what took seconds on the GPU, so a
time budget (``--stop-after``) must be spent in the recorded cost of each
evaluation, not in wall-clock time. The search driver stops on wall-clock
time; this wrapper lets the driver's own "technique is done" rule end the run
once the simulated clock has passed the budget, and records the
improvement trace for ``--json-out``. It forwards everything else to the
wrapped technique, so bandit credit and resume behave as without it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from apps.replay.model import RecordedSpace

__all__ = ["SimulatedClock"]


class SimulatedClock:
    """Wraps a Technique; counts unique evaluations, their recorded cost and the best value."""

    def __init__(self, inner: Any, recorded: RecordedSpace, *, stop_after: float | None = None) -> None:
        self.inner = inner
        self.recorded = recorded
        self.stop_after = stop_after
        self.name = getattr(inner, "name", "technique")
        self.elapsed = 0.0          # simulated seconds spent on unique evaluations
        self.evaluations = 0
        self.best_scalar = math.inf
        self.trace: list[list[float]] = []   # [evaluations, best user value] at each improvement
        self._seen: set[str] = set()

    # -- the clock ----------------------------------------------------------
    @property
    def out_of_time(self) -> bool:
        return self.stop_after is not None and self.elapsed >= self.stop_after

    def _charge(self, trial: Any) -> None:
        if trial.duplicate or trial.config_hash in self._seen:
            return
        self._seen.add(trial.config_hash)
        self.evaluations += 1
        self.elapsed += self.recorded.evaluate(trial.config).cost
        if trial.state == "OK" and trial.value < self.best_scalar:
            self.best_scalar = trial.value
            user = -trial.value if self.recorded.maximize else trial.value
            self.trace.append([self.evaluations, user])

    # -- Technique interface, forwarded ---------------------------------------
    def bind(self, space: Any, *, budget: int | None, rng: Any) -> None:
        self.inner.bind(space, budget=budget, rng=rng)

    def propose(self, n: int) -> list[dict[str, Any]]:
        if self.out_of_time:
            return []
        return self.inner.propose(n)

    def observe(self, trial: Any) -> None:
        self._charge(trial)
        self.inner.observe(trial)

    def observe_foreign(self, trial: Any) -> None:
        self._charge(trial)
        self.inner.observe_foreign(trial)

    def restore(self, trials: Sequence[Any]) -> None:
        for t in trials:
            self._charge(t)
        self.inner.restore(trials)

    @property
    def done(self) -> bool:
        return self.out_of_time or bool(self.inner.done)

    def credit_name(self, config_hash: str) -> str:
        return self.inner.credit_name(config_hash)

    def state_dict(self) -> dict[str, Any]:
        return self.inner.state_dict()

    def __getattr__(self, item: str) -> Any:  # anything else the driver may read
        return getattr(self.inner, item)
