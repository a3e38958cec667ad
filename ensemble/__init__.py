"""ensemble-tuner: an ensemble autotuner over a shared results database.

Only cheap modules are imported here.  The app, driver and tuning entry
points (``TunerApp``, ``tune``, ``Tuner``, ``TuneResult``, ``RunSettings``)
are loaded on first access through module ``__getattr__``, so
``import ensemble`` stays fast and never fails because of them.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import types
from typing import Any

from ensemble import logging as _logging  # noqa: F401 - the "ensemble" logger's NullHandler
from ensemble.errors import (
    ConfigurationError,
    DatabaseLockedError,
    EnsembleError,
    InfeasibleSpaceError,
    MissingExtraError,
    ObjectiveError,
    RunExistsError,
    SchemaVersionError,
    SpaceError,
    StorageError,
    TechniqueError,
)
from ensemble.objective import (
    Lexicographic,
    Maximize,
    Minimize,
    Objective,
    Pareto,
    WeightedSum,
)
from ensemble.result import Result, TrialState, coerce_result
from ensemble.space import (
    Boolean,
    Enum,
    Float,
    Integer,
    LogFloat,
    LogInteger,
    Parameter,
    Permutation,
    PowerOfTwo,
    SearchSpace,
    canonical_json,
    config_hash,
)
from ensemble.technique import Technique, Trial

__version__ = "0.1.0"

# public name -> module providing it, imported on first access
_LAZY: dict[str, str] = {
    "TunerApp": "ensemble.app",
    "tune": "ensemble.tune",
    "Tuner": "ensemble.tune",
    "TuneResult": "ensemble.tune",
    "RunSession": "ensemble.driver.session",
    "RunSettings": "ensemble.settings",
}

__all__ = [  # noqa: RUF022 - grouped by topic
    # space
    "SearchSpace",
    "Parameter",
    "Integer",
    "Float",
    "LogInteger",
    "LogFloat",
    "PowerOfTwo",
    "Enum",
    "Boolean",
    "Permutation",
    "canonical_json",
    "config_hash",
    # results and objectives
    "Result",
    "TrialState",
    "coerce_result",
    "Objective",
    "Minimize",
    "Maximize",
    "Lexicographic",
    "WeightedSum",
    "Pareto",
    # techniques
    "Technique",
    "Trial",
    # errors
    "EnsembleError",
    "SpaceError",
    "InfeasibleSpaceError",
    "ConfigurationError",
    "StorageError",
    "DatabaseLockedError",
    "SchemaVersionError",
    "RunExistsError",
    "ObjectiveError",
    "TechniqueError",
    "MissingExtraError",
]
# lazily loaded names are public once their module exists (star imports must not fail)
__all__ += [n for n, m in _LAZY.items() if importlib.util.find_spec(m) is not None]


class _CallableModule(types.ModuleType):
    """``ensemble.tune`` is both a submodule and the function ``tune`` inside it.

    Importing a submodule binds it on the package (``ensemble.tune`` becomes the
    module, shadowing the function), so the module itself is made callable:
    ``ensemble.tune(...)`` works whichever was imported first.
    """

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self.tune(*args, **kwargs)


class _Package(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if (
            name == "tune"
            and type(value) is types.ModuleType
            and value.__name__ == f"{self.__name__}.tune"
            and callable(getattr(value, "tune", None))
        ):
            value.__class__ = _CallableModule
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _Package


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module 'ensemble' has no attribute {name!r}")
    try:
        value = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as exc:
        raise AttributeError(
            f"ensemble.{name} is provided by {module}, which is not available ({exc})"
        ) from exc
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_LAZY))
