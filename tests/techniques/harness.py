"""In-memory stand-in for the drivers: propose / measure / observe with dedup.

Why: the conformance and bandit tests need the driver's exact contract
(a duplicate configuration is answered from the earlier result and marked
duplicate, not counted; the budget counts unique evaluations) without a
database.  Objectives return a float; ``math.inf`` marks a failed evaluation.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ensemble.technique import Technique, Trial

__all__ = ["RunLog", "run_technique"]


@dataclass
class RunLog:
    """Everything a run did, in order."""

    proposals: list[dict[str, Any]] = field(default_factory=list)
    trials: list[Trial] = field(default_factory=list)
    batch_sizes: list[int] = field(default_factory=list)
    unique: int = 0
    best_value: float = math.inf
    best_config: dict[str, Any] | None = None
    trace: list[tuple[int, float]] = field(default_factory=list)  # (unique evals, best) at improvements

    @property
    def hashes(self) -> list[str]:
        return [t.config_hash for t in self.trials]


def run_technique(technique: Technique, space: Any, objective: Callable[[dict[str, Any]], float], *,
                  budget: int, seed: int = 0, batch: int = 1, max_proposals: int | None = None) -> RunLog:
    """Run ``technique`` on ``space`` until ``budget`` unique evaluations (or it stalls).

    ``batch`` is the n of each propose(n): the whole batch is measured, then
    observed in order, as parallel workers would.  ``max_proposals`` bounds
    duplicates (default 20 x budget + 1000) so a technique that only repeats
    itself ends the run instead of hanging it.
    """
    technique.bind(space, budget=budget, rng=np.random.default_rng(seed))
    log = RunLog()
    cache: dict[str, float] = {}
    limit = max_proposals if max_proposals is not None else 20 * budget + 1000
    while log.unique < budget and len(log.proposals) < limit and not technique.done:
        configs = technique.propose(batch)
        log.batch_sizes.append(len(configs))
        if not configs:
            break  # nothing outstanding in this harness: the technique has nothing more to say
        pending: list[Trial] = []
        for config in configs:
            if log.unique >= budget or len(log.proposals) >= limit:
                break
            log.proposals.append(config)
            h = space.config_hash(config)
            duplicate = h in cache
            if not duplicate:
                value = float(objective(config))
                cache[h] = math.inf if math.isnan(value) else value
                log.unique += 1
            value = cache[h]
            trial = Trial(config=config, config_hash=h, value=value,
                          state="OK" if math.isfinite(value) else "FAILED",
                          technique=technique.credit_name(h), duplicate=duplicate, evaluation=log.unique)
            pending.append(trial)
            if value < log.best_value:
                log.best_value, log.best_config = value, dict(config)
                log.trace.append((log.unique, value))
        for trial in pending:
            technique.observe(trial)
            log.trials.append(trial)
    return log
