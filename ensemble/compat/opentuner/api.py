"""``opentuner.api``: TuningRunManager, for programs that own their loop.

Why on our ask/tell Tuner: OpenTuner's API hands out ``DesiredResult``s and
takes ``Result``s back while the caller measures; our ``ensemble.tune.Tuner``
does the same with requests claimed in the database, so each
``get_next_desired_result`` is one ``ask`` and each ``report_result`` one
``tell``. The run is in our database like any other.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from ensemble.compat.opentuner._adapter import to_ensemble_result
from ensemble.compat.opentuner._errors import UnsupportedError
from ensemble.compat.opentuner._flags import settings_from_args, warn_ignored
from ensemble.compat.opentuner._run import (
    check_supported,
    choose_technique,
    start_asktell,
)
from ensemble.compat.opentuner.resultsdb.models import (
    Configuration,
    DesiredResult,
    Result,
)
from ensemble.compat.opentuner.search.objective import ensemble_objective
from ensemble.errors import EnsembleError
from ensemble.result import Result as _EnsembleResult

__all__ = ["TuningRunManager"]


class TuningRunManager:
    """Ask for configurations, measure them yourself, report the results, ``finish()``."""

    def __init__(self, measurement_interface: Any, args: argparse.Namespace, **_: Any) -> None:
        warn_ignored(args)
        check_supported(measurement_interface)
        self.measurement_interface = measurement_interface
        self.args = args
        self.manipulator = measurement_interface.manipulator()
        self.ot_objective = measurement_interface.objective()
        objective = ensemble_objective(self.ot_objective)
        settings = settings_from_args(args)
        name, technique = choose_technique(getattr(args, "technique", None), self.manipulator,
                                           self.ot_objective, settings.seed)
        if technique is not None:
            raise UnsupportedError(f"a registered OpenTuner technique ({name!r}) driving TuningRunManager",
                                   "pick one of our techniques with --technique (ensemble-tuner --list-techniques), "
                                   "or run the technique through MeasurementInterface.main")
        settings.technique = name
        self._tuner = start_asktell(self.manipulator.to_space(), objective, settings)
        self._internal: dict[int, tuple[dict[str, Any], float]] = {}

    def _desired(self, internal: dict[str, Any]) -> DesiredResult:
        view = self.manipulator.to_view(internal)
        space = self.manipulator.to_space()
        dr = DesiredResult(Configuration(view, hash=space.config_hash(internal)), requestor="ensemble",
                           limit=self.args.__dict__.get("trial_limit") or float("inf"))
        self._internal[id(dr)] = (internal, time.monotonic())
        return dr

    def get_next_desired_result(self) -> DesiredResult | None:
        """The next configuration to measure, or None when the run is over (or nothing new is left)."""
        if self._tuner.done:
            return None
        try:
            return self._desired(self._tuner.ask())
        except EnsembleError:
            return None

    def get_desired_results(self) -> list[DesiredResult]:
        dr = self.get_next_desired_result()
        return [] if dr is None else [dr]

    def report_result(self, desired_result: DesiredResult, result: Result, result_input: Any = None) -> None:
        """Record the measurement of a configuration this manager handed out."""
        handed = self._internal.pop(id(desired_result), None)
        if handed is None:
            raise EnsembleError("report_result(desired_result, ...): that DesiredResult was not handed out by "
                                "this manager's get_next_desired_result(), or was reported already")
        internal, since = handed
        desired_result.result = result
        outcome = to_ensemble_result(result, self.ot_objective)
        if isinstance(outcome, _EnsembleResult) and outcome.cost is None:
            # the caller measured between handing out and reporting: that is what the evaluation cost
            outcome.cost = time.monotonic() - since
        self._tuner.tell(internal, outcome)

    def get_best_configuration(self) -> Any:
        best, _ = self._tuner.best
        return None if best is None else self.manipulator.to_view(best)

    def get_best_result(self) -> Result | None:
        best, value = self._tuner.best
        if best is None:
            return None
        result = Result(time=value, configuration=Configuration(self.manipulator.to_view(best)))
        result._ensemble_value = value  # type: ignore[attr-defined]
        return result

    def finish(self) -> None:
        """Close the run and call save_final_config with the best configuration."""
        self._tuner.close()
        best = self.get_best_configuration()
        if best is not None:
            self.measurement_interface.save_final_config(Configuration(best))
