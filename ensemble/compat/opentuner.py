"""OpenTuner API shim: run an OpenTuner app with only its imports changed.

Why: people have OpenTuner apps (``MeasurementInterface`` subclasses with
``manipulator()`` and ``run(desired_result, input, limit)``). Replacing
``import opentuner`` / ``from opentuner import ...`` with
``from ensemble.compat import opentuner`` / ``from ensemble.compat.opentuner
import ...`` runs them on our drivers, database and techniques. Only the parts
of OpenTuner's API that apps touch are provided; the search internals are ours.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from typing import Any

from ensemble.app import TunerApp, app_reference
from ensemble.objective import Maximize, Minimize, Objective
from ensemble.result import Result as _Result
from ensemble.space import (
    Boolean,
    Enum,
    Float,
    Integer,
    LogFloat,
    LogInteger,
    Permutation,
    PowerOfTwo,
    SearchSpace,
)

__all__ = [
    "BooleanParameter",
    "ConfigurationManipulator",
    "EnumParameter",
    "FloatParameter",
    "IntegerParameter",
    "LogFloatParameter",
    "LogIntegerParameter",
    "MaximizeAccuracy",
    "MeasurementInterface",
    "MinimizeTime",
    "PermutationParameter",
    "PowerOfTwoParameter",
    "Result",
    "SwitchParameter",
    "argparsers",
    "default_argparser",
]


# -- parameters: thin factories onto our parameter types ---------------------------
def IntegerParameter(name: str, min_value: int, max_value: int) -> Integer:
    return Integer(name, int(min_value), int(max_value))


def FloatParameter(name: str, min_value: float, max_value: float) -> Float:
    return Float(name, float(min_value), float(max_value))


def LogIntegerParameter(name: str, min_value: int, max_value: int) -> LogInteger:
    return LogInteger(name, int(min_value), int(max_value))


def LogFloatParameter(name: str, min_value: float, max_value: float) -> LogFloat:
    return LogFloat(name, float(min_value), float(max_value))


def PowerOfTwoParameter(name: str, min_value: int, max_value: int) -> PowerOfTwo:
    return PowerOfTwo(name, int(min_value), int(max_value))


def EnumParameter(name: str, options: Sequence[Any]) -> Enum:
    return Enum(name, list(options))


def BooleanParameter(name: str) -> Boolean:
    return Boolean(name)


def SwitchParameter(name: str, option_count: int) -> Integer:
    """OpenTuner's switch: an unordered choice among 0..option_count-1."""
    return Enum(name, list(range(int(option_count))))  # type: ignore[return-value]


def PermutationParameter(name: str, items: Sequence[Any]) -> Permutation:
    return Permutation(name, list(items))


class ConfigurationManipulator:
    """Holds parameters like OpenTuner's manipulator; becomes a SearchSpace."""

    def __init__(self, params: Sequence[Any] | None = None, config_type: type = dict, seed_config: Any = None,
                 **_: Any) -> None:
        self.params: list[Any] = list(params or [])

    def add_parameter(self, param: Any) -> None:
        self.params.append(param)

    def parameters(self, config: Any = None) -> list[Any]:
        return list(self.params)

    def to_space(self) -> SearchSpace:
        space = SearchSpace()
        if self.params:
            space.add(*self.params)
        return space


class Result:
    """OpenTuner's result record (time, accuracy, energy, size, confidence, state)."""

    def __init__(self, time: float | None = None, accuracy: float | None = None, energy: float | None = None,
                 size: float | None = None, confidence: float | None = None, state: str = "OK",
                 **extra: Any) -> None:
        self.time, self.accuracy, self.energy = time, accuracy, energy
        self.size, self.confidence, self.state = size, confidence, state
        self.extra = extra

    def to_ensemble(self) -> _Result:
        metrics = {k: float(v) for k, v in (("accuracy", self.accuracy), ("energy", self.energy),
                                              ("size", self.size), ("confidence", self.confidence))
                   if v is not None}
        if self.state in ("ERROR", "FAILED"):
            return _Result(state="FAILED", reason="run() returned Result(state='ERROR')", metrics=metrics)
        if self.state == "TIMEOUT":
            return _Result(state="TIMEOUT", reason="run() returned Result(state='TIMEOUT')", metrics=metrics)
        return _Result(time=self.time, metrics=metrics)


def MinimizeTime() -> Objective:
    return Minimize("time")


def MaximizeAccuracy() -> Objective:
    return Maximize("accuracy")


class _Configuration:
    def __init__(self, data: dict[str, Any]) -> None:
        self.data = data


class _DesiredResult:
    def __init__(self, data: dict[str, Any], limit: float | None) -> None:
        self.configuration = _Configuration(data)
        self.limit = limit


class _Input:
    input_class = None
    path = None
    extra = None


def argparsers() -> list[argparse.ArgumentParser]:
    """Parents for the app's own parser (the standard ensemble-tuner flags)."""
    from ensemble.cli import add_standard_arguments

    parser = argparse.ArgumentParser(add_help=False)
    add_standard_arguments(parser)
    return [parser]


def default_argparser() -> argparse.ArgumentParser:
    return argparse.ArgumentParser(parents=argparsers())


class _AppAdapter(TunerApp):
    """A TunerApp that forwards to a MeasurementInterface instance."""

    def __init__(self, interface: MeasurementInterface) -> None:
        super().__init__(interface.args)
        self.interface = interface

    def space(self) -> SearchSpace:
        return self.interface.manipulator().to_space()

    def objective(self) -> Objective:
        return self.interface.objective()

    def seed_configurations(self) -> list[dict[str, Any]]:
        return [dict(c) for c in self.interface.seed_configurations()]

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        out = self.interface.run(_DesiredResult(config, limit), _Input(), limit)
        return out.to_ensemble() if isinstance(out, Result) else out


class MeasurementInterface:
    """Base class of OpenTuner-style apps; subclass and define manipulator() and run()."""

    _ensemble_opentuner = True

    def __init__(self, args: argparse.Namespace | None = None, program_name: str | None = None,
                 program_version: str = "unknown", manipulator: ConfigurationManipulator | None = None,
                 objective: Objective | None = None, input_manager: Any = None, **_: Any) -> None:
        self.args = args if args is not None else default_argparser().parse_args([])
        self._program_name = program_name or type(self).__name__
        self._manipulator = manipulator
        self._objective = objective

    def manipulator(self) -> ConfigurationManipulator:
        if self._manipulator is None:
            raise NotImplementedError(f"{type(self).__name__}.manipulator(): return a ConfigurationManipulator")
        return self._manipulator

    def objective(self) -> Objective:
        return self._objective if self._objective is not None else MinimizeTime()

    def seed_configurations(self) -> list[dict[str, Any]]:
        return []

    def run(self, desired_result: Any, input: Any, limit: float | None) -> Result:
        raise NotImplementedError(f"{type(self).__name__}.run(desired_result, input, limit)")

    def save_final_config(self, configuration: Any) -> None:
        """Called with the best configuration (``.data``) at the end; override to save it."""

    def program_name(self) -> str:
        return self._program_name

    def as_tuner_app(self) -> TunerApp:
        return _AppAdapter(self)

    def call_program(self, cmd: str | Sequence[str], limit: float | None = None,
                     memory_limit: Any = None, **kwargs: Any) -> dict[str, Any]:
        """Run a command (a string goes through the shell, as in OpenTuner); kill its group on limit."""
        t0 = time.perf_counter()
        proc = subprocess.Popen(cmd, shell=isinstance(cmd, str), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                start_new_session=True, **kwargs)
        timeout = False
        try:
            out, err = proc.communicate(timeout=limit if limit and limit != float("inf") else None)
        except subprocess.TimeoutExpired:
            timeout = True
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
        return {"time": time.perf_counter() - t0, "timeout": timeout, "returncode": proc.returncode,
                "stdout": out, "stderr": err}

    @classmethod
    def main(cls, args: argparse.Namespace | Sequence[str] | None = None, *pargs: Any, **kwargs: Any) -> int:
        """Tune with the standard flags in ``args`` (a namespace from argparsers() parents)."""
        from ensemble.cli import _setup_logging, print_result, settings_from_args
        from ensemble.driver.local import run_app
        from ensemble.errors import EnsembleError

        if args is None or not isinstance(args, argparse.Namespace):
            args = default_argparser().parse_args(list(args) if args is not None else sys.argv[1:])
        _setup_logging(bool(getattr(args, "quiet", False)))
        interface = cls(args, *pargs, **kwargs)
        try:
            result = run_app(interface.as_tuner_app(), settings_from_args(args),
                             app_ref=app_reference(cls), app_argv=list(sys.argv[1:]))
        except EnsembleError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
        print_result(result)
        if result.best_config is not None:
            interface.save_final_config(_Configuration(result.best_config))
        return 0
