"""OpenTuner's API on our drivers: OpenTuner apps run here with their imports changed, or unchanged.

Why: people come with OpenTuner tuners (a ``MeasurementInterface`` subclass
with ``manipulator()`` and ``run(desired_result, input, limit)``). Changing
``import opentuner`` to ``from ensemble.compat import opentuner`` (and
``from opentuner.x import y`` to ``from ensemble.compat.opentuner.x import y``)
runs them on our drivers, database and techniques; ``ensemble-tuner opentuner
APP.py [flags]`` runs them with no change at all (``_hook`` maps ``opentuner``
to this package for that run only). The subpackages mirror OpenTuner's
module paths (``measurement.interface``, ``search.manipulator``,
``search.objective``, ``search.technique``, ``resultsdb.models``, ``api``).
What is not provided raises :class:`UnsupportedError` naming the part and
what to use instead; docs/OPENTUNER.md is the migration guide.
"""

from __future__ import annotations

import argparse

from ensemble.compat.opentuner import measurement, resultsdb, search, tuningrunmain
from ensemble.compat.opentuner._errors import UnsupportedError
from ensemble.compat.opentuner._flags import argparsers
from ensemble.compat.opentuner._hook import install_refusal_for_compat_paths
from ensemble.compat.opentuner.measurement import (
    DefaultMeasurementInterface,
    MeasurementInterface,
)
from ensemble.compat.opentuner.resultsdb.models import (
    Configuration,
    DesiredResult,
    Result,
    TuningRun,
)
from ensemble.compat.opentuner.search.manipulator import (
    BooleanParameter,
    ConfigurationManipulator,
    EnumParameter,
    FloatParameter,
    IntegerParameter,
    LogFloatParameter,
    LogIntegerParameter,
    PermutationParameter,
    PowerOfTwoParameter,
    ScheduleParameter,
    SwitchParameter,
)
from ensemble.compat.opentuner.search.objective import MaximizeAccuracy, MinimizeTime
from ensemble.compat.opentuner.tuningrunmain import init_logging

__all__ = [
    "BooleanParameter",
    "Configuration",
    "ConfigurationManipulator",
    "DefaultMeasurementInterface",
    "DesiredResult",
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
    "ScheduleParameter",
    "SwitchParameter",
    "TuningRun",
    "UnsupportedError",
    "argparsers",
    "default_argparser",
    "init_logging",
    "measurement",
    "resultsdb",
    "search",
    "tuningrunmain",
]


install_refusal_for_compat_paths()


def default_argparser() -> argparse.ArgumentParser:
    """A parser with OpenTuner's flags only (what ``opentuner.default_argparser()`` gives)."""
    return argparse.ArgumentParser(parents=argparsers())
