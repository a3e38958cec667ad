"""Run a technique through the real search driver on the in-memory store, and read back what it did.

Why not a stand-in loop: a second copy of the driver's contract (dedup,
duplicates answered from the stored result, the budget counting unique
evaluations, failures) drifts from the real one.  This helper starts an
ordinary run (``RunSession`` with the same-thread loop, ``memory://``) and
only *reads* the run afterwards, so the technique tests exercise exactly what
users run.

Objectives return a float; ``math.inf`` (or NaN) marks a failed evaluation,
which becomes a FAILED trial.  Every evaluation is charged a recorded cost of
an hour (``Result.cost``, as a replay charges its recorded cost; an FPGA flow
costs that much), so a technique's rules that compare its own compute with
the evaluations' cost (BayesOpt retiring in the default ensemble) never fire
here, whatever this machine's speed or load, and the same seed gives the same
trajectory in any process.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ensemble.driver import RunSession
from ensemble.driver.records import to_trial
from ensemble.result import Result
from ensemble.settings import RunSettings
from ensemble.storage import open_storage
from ensemble.technique import Technique, Trial

__all__ = ["RunLog", "run_technique"]

#: seconds each evaluation is charged (see the module docstring)
RECORDED_COST = 3600.0


@dataclass
class RunLog:
    """Everything a run did, in request order."""

    proposals: list[dict[str, Any]] = field(default_factory=list)
    trials: list[Trial] = field(default_factory=list)
    batch_sizes: list[int] = field(default_factory=list)
    unique: int = 0
    best_value: float = math.inf
    best_config: dict[str, Any] | None = None
    trace: list[tuple[int, float]] = field(default_factory=list)  # (unique evals, best) at improvements
    stop_reason: str | None = None

    @property
    def hashes(self) -> list[str]:
        return [t.config_hash for t in self.trials]


class _FunctionApp:
    """The smallest app the session accepts: a space and a float objective."""

    def __init__(self, space: Any, objective: Callable[[dict[str, Any]], float]) -> None:
        self._space, self._objective = space, objective
        self.argv: list[str] = []

    def space(self) -> Any:
        return self._space

    def objective(self) -> Any:
        from ensemble.objective import Minimize

        return Minimize("time")

    def seed_configurations(self) -> list[dict[str, Any]]:
        return []

    def run(self, config: dict[str, Any], limit: float | None) -> Result:
        value = float(self._objective(config))
        if not math.isfinite(value):
            return Result(state="FAILED", reason="objective returned a non-finite value", cost=RECORDED_COST)
        return Result(time=value, cost=RECORDED_COST)


def run_technique(technique: Technique, space: Any, objective: Callable[[dict[str, Any]], float], *,
                  budget: int, seed: int = 0, batch: int = 1, stop_after: float = 120.0) -> RunLog:
    """Run ``technique`` on ``space`` until ``budget`` unique evaluations, or until it stops proposing.

    ``batch`` is ``--batch``: with fast trials the driver asks ``propose(batch)``
    and measures the batch before the technique sees the results.
    ``stop_after`` only guards a technique that repeats itself forever.
    """
    sizes: list[int] = []
    propose = technique.propose

    def recording_propose(n: int) -> list[dict[str, Any]]:
        out = propose(n)
        sizes.append(len(out))
        assert len(out) <= n, f"{technique.name}.propose({n}) returned {len(out)} configurations"
        return out

    technique.propose = recording_propose  # type: ignore[method-assign]
    settings = RunSettings(database="memory://", test_limit=budget, seed=seed, batch=batch, quiet=True,
                           stop_after=stop_after, run_name="driven")
    store = open_storage("memory://")
    session = RunSession(_FunctionApp(space, objective), settings, app_ref="tests.techniques.driven:run_technique",
                         technique=technique, storage=store)
    result = session.run()
    log = RunLog(batch_sizes=sizes, stop_reason=result.stop_reason)
    for row in store.trials(session.run_id):
        if str(row.state) in ("WAITING", "RUNNING"):
            continue                      # withdrawn or never measured (a stopped search)
        if not row.duplicate:
            log.unique += 1
        trial = to_trial(row, log.unique)
        log.proposals.append(trial.config)
        log.trials.append(trial)
        if trial.value < log.best_value:
            log.best_value, log.best_config = trial.value, dict(trial.config)
            log.trace.append((log.unique, trial.value))
    store.close()
    return log
