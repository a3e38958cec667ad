"""A TunerApp that measures through an OpenTuner MeasurementInterface.

Why two classes: OpenTuner measures either with ``compile_and_run`` (which
defaults to ``run``), one configuration at a time, or, with
``--parallel-compile``, with ``compile(cfg, id)`` in parallel and
``run_precompiled(..., compile_result, id)`` in order. Our drivers offer
the same split (``compile`` + ``run_compiled``, DESIGN.md "The app API"),
so each mode maps onto the matching TunerApp shape. Every configuration
reaches the app in its own names and shapes (the manipulator's
``to_view``), wrapped in a DesiredResult as OpenTuner passes it.
"""

from __future__ import annotations

import itertools
import math
from typing import Any

from ensemble.app import TunerApp
from ensemble.compat.opentuner.resultsdb.models import (
    Configuration,
    DesiredResult,
    Input,
    Result,
)
from ensemble.compat.opentuner.search.objective import ensemble_objective
from ensemble.result import Result as _EnsembleResult

__all__ = ["CompilingInterfaceApp", "InterfaceApp", "make_app", "to_ensemble_result"]


def to_ensemble_result(returned: Any, objective: Any) -> Any:
    """Our Result for what the app returned (an OpenTuner Result, a number, or one of ours)."""
    if isinstance(returned, Result):
        result = returned.to_ensemble()
        derived = getattr(objective, "derived_metrics", None)
        if callable(derived) and result.state == "OK":
            result.metrics = {**result.metrics, **derived(returned)}
        return result
    if isinstance(returned, dict) and "time" in returned and "returncode" in returned:
        # an app that returned call_program()'s dict instead of a Result
        if returned.get("timeout"):
            return _EnsembleResult(state="TIMEOUT", reason="call_program() timed out")
        return _EnsembleResult(time=float(returned["time"]))
    return returned  # a float or our Result; the driver's coerce_result checks it


class InterfaceApp(TunerApp):
    """Measures with ``interface.compile_and_run(desired_result, input, limit)``."""

    def __init__(self, interface: Any, manipulator: Any, objective: Any, seeds: list[Any]) -> None:
        super().__init__(interface.args)
        self.interface = interface
        self.manipulator = manipulator
        self.ot_objective = objective
        self._objective = ensemble_objective(objective)
        self._seeds = [manipulator.to_internal(s) for s in seeds]
        self._ids = itertools.count()

    def space(self) -> Any:
        return self.manipulator.to_space()

    def objective(self) -> Any:
        return self._objective

    def seed_configurations(self) -> list[dict[str, Any]]:
        return [dict(s) for s in self._seeds]

    def desired_result(self, config: dict[str, Any], limit: float | None) -> DesiredResult:
        view = self.manipulator.to_view(config)
        return DesiredResult(Configuration(view, hash=self.space().config_hash(config)),
                             limit=math.inf if limit is None else limit, requestor="ensemble")

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        dr = self.desired_result(config, limit)
        return to_ensemble_result(self.interface.compile_and_run(dr, Input(), dr.limit), self.ot_objective)


class CompilingInterfaceApp(InterfaceApp):
    """With --parallel-compile: ``compile(cfg, id)`` in workers, ``run_precompiled`` in request order."""

    def compile(self, config: dict[str, Any]) -> Any:
        build_id = next(self._ids)
        return build_id, self.interface.compile(self.manipulator.to_view(config), build_id)

    def run_compiled(self, config: dict[str, Any], artifact: Any, limit: float | None) -> Any:
        build_id, compile_result = artifact
        dr = self.desired_result(config, limit)
        try:
            returned = self.interface.run_precompiled(dr, Input(), dr.limit, compile_result, build_id)
        finally:
            self.interface.cleanup(build_id)
        return to_ensemble_result(returned, self.ot_objective)


def make_app(interface: Any, seeds: list[Any] | None = None) -> InterfaceApp:
    """The TunerApp for ``interface`` (its manipulator and objective are asked for once, here)."""
    cls = CompilingInterfaceApp if interface.parallel_compile else InterfaceApp
    return cls(interface, interface.manipulator(), interface.objective(),
               list(interface.seed_configurations() or []) + list(seeds or []))
