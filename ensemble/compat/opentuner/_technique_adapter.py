"""Run an OpenTuner-style technique object inside our drivers.

Why an adapter and not a port: the user's technique calls into OpenTuner's
driver (``self.driver.get_configuration``, ``has_results``,
``best_result``) and manipulator; we give it a small driver that answers
from the results our search driver reports (``observe`` /
``observe_foreign``), and turn what it proposes into our configurations.
It draws random numbers from the generator our driver hands to ``bind``,
so a seed gives the same run.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from ensemble.compat.opentuner.resultsdb.models import Configuration, Result
from ensemble.technique import Technique, Trial

__all__ = ["OpenTunerTechnique"]


class _Query:
    """The few query methods techniques call on ``driver.results_query(...)``."""

    def __init__(self, rows: list[Result]) -> None:
        self._rows = rows

    def all(self) -> list[Result]:
        return list(self._rows)

    def first(self) -> Result | None:
        return self._rows[0] if self._rows else None

    def one(self) -> Result:
        if len(self._rows) != 1:
            raise LookupError(f"results_query().one(): {len(self._rows)} results")
        return self._rows[0]

    def count(self) -> int:
        return len(self._rows)

    def __iter__(self) -> Any:
        return iter(self._rows)


class _Driver:
    """What an OpenTuner technique reads from ``self.driver``."""

    def __init__(self, manipulator: Any, objective: Any) -> None:
        self.manipulator = manipulator
        self.objective = objective
        self.best_result: Result | None = None
        self.generation = 0
        self.tuning_run = None
        self._results: dict[str, Result] = {}

    def _hash(self, cfg: Any) -> str:
        data = cfg.data if isinstance(cfg, Configuration) else cfg
        return str(self.manipulator.hash_config(data))

    def get_configuration(self, data: Any) -> Configuration:
        return Configuration(data, hash=self._hash(data))

    def has_results(self, cfg: Any) -> bool:
        return self._hash(cfg) in self._results

    def result_for(self, cfg: Any) -> Result | None:
        return self._results.get(self._hash(cfg))

    def results_query(self, config: Any = None, **_: Any) -> _Query:
        if config is None:
            return _Query(list(self._results.values()))
        found = self.result_for(config)
        return _Query([] if found is None else [found])

    def add_plugin(self, plugin: Any) -> None:
        """OpenTuner plugins are not called here (techniques register themselves this way)."""

    def record(self, config_hash: str, view: Any, trial: Trial) -> Result:
        result = Result(time=trial.value if trial.ok else math.inf,
                        state={"OK": "OK", "TIMEOUT": "TIMEOUT"}.get(trial.state, "ERROR"),
                        configuration=Configuration(view, hash=config_hash))
        result._ensemble_value = trial.value  # type: ignore[attr-defined]
        self._results[config_hash] = result
        best = self.best_result
        if trial.ok and (best is None or trial.value < best._ensemble_value):  # type: ignore[attr-defined]
            self.best_result = result
        return result


class OpenTunerTechnique(Technique):
    """One OpenTuner technique object as our Technique (ask/tell)."""

    name = "OpenTunerTechnique"

    def __init__(self, technique: Any, manipulator: Any, objective: Any, *, seed: int | None = None) -> None:
        super().__init__(seed=seed)
        self.technique = technique
        self.name = str(getattr(technique, "name", type(technique).__name__))  # type: ignore[misc]
        self.manipulator = manipulator
        self.objective = objective
        self._driver = _Driver(manipulator, objective)
        self._pending: set[str] = set()

    def bind(self, space: Any, *, budget: int | None, rng: np.random.Generator) -> None:
        super().bind(space, budget=budget, rng=rng)
        self.manipulator.rng = rng  # the technique's random() and operators draw from our generator
        self.objective.set_driver(self._driver)
        self.technique.set_driver(self._driver)

    def propose(self, n: int) -> list[dict[str, Any]]:
        space = self._need_space()
        out: list[dict[str, Any]] = []
        for _ in range(4 * n + 8):  # a technique may yield configurations that are already in flight
            if len(out) >= n:
                break
            cfg = self.technique.desired_result()
            if cfg is None or cfg is False:
                break
            data = getattr(cfg, "configuration", cfg)
            data = data.data if isinstance(data, Configuration) else data
            internal = self.manipulator.to_internal(data)
            if not space.is_valid(internal):
                internal = space.repair(internal, self.rng)
            key = space.config_hash(internal)
            if key in self._pending:
                continue
            self._pending.add(key)
            out.append(internal)
        return out

    def _record(self, trial: Trial) -> Result:
        self._pending.discard(trial.config_hash)
        view = self.manipulator.to_view(trial.config)
        return self._driver.record(self.manipulator.hash_config(view), view, trial)

    def observe(self, trial: Trial) -> None:
        self.technique.handle_requested_result(self._record(trial))

    def observe_foreign(self, trial: Trial) -> None:
        self._record(trial)

    @property
    def done(self) -> bool:
        return bool(getattr(self.technique, "done", False))
