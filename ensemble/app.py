"""TunerApp: the class a user subclasses to tune something.

Why a base class with plain methods: the user writes ``space()`` and
``run(config, limit)`` and nothing else; everything about searching, storing
and measuring in parallel lives in the drivers, which only call these methods
(DESIGN.md, "The app API").
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ensemble.objective import Objective
    from ensemble.result import Result
    from ensemble.space import SearchSpace

__all__ = ["TunerApp", "app_reference", "load_app_class"]

#: module-name prefix of app scripts loaded by path (load_app_class)
_SCRIPT_PREFIX = "_ensemble_app_"


class TunerApp:
    """Base class of a tuner app.

    Subclasses implement :meth:`space` and :meth:`run` (or :meth:`compile` and
    :meth:`run_compiled`). ``self.args`` holds the parsed command line (the
    app's own flags from :meth:`add_arguments` included), or an empty namespace
    when the app is used from Python.
    """

    #: set by main(): the app's own command-line arguments, so that
    #: ``ensemble-tuner worker`` can build the same app in another process.
    argv: list[str]

    def __init__(self, args: argparse.Namespace | None = None) -> None:
        self.args = args if args is not None else argparse.Namespace()
        self.argv = []

    # -- what a user writes --------------------------------------------------
    def space(self) -> SearchSpace:
        """Return the SearchSpace to tune over."""
        raise NotImplementedError(
            f"{type(self).__name__}.space(): define space() returning an ensemble.SearchSpace"
        )

    def run(self, config: dict[str, Any], limit: float | None) -> float | Result:
        """Measure one configuration; return a time in seconds or a Result.

        ``limit`` is the number of seconds this trial may take (None: no limit).
        The default compiles then runs, so apps that only define
        compile()/run_compiled() work too.
        """
        if type(self).compile is TunerApp.compile:
            raise NotImplementedError(
                f"{type(self).__name__}.run(): define run(config, limit) "
                "(or compile(config) and run_compiled(config, artifact, limit))"
            )
        return self.run_compiled(config, self.compile(config), limit)

    def compile(self, config: dict[str, Any]) -> Any:
        """Optional: build an artifact for config; called in parallel by workers."""
        raise NotImplementedError

    def run_compiled(self, config: dict[str, Any], artifact: Any, limit: float | None) -> float | Result:
        """Optional: measure a compiled artifact; called in request order."""
        raise NotImplementedError(
            f"{type(self).__name__}.run_compiled(): define it when you define compile()"
        )

    def seed_configurations(self) -> list[dict[str, Any]]:
        """Configurations to measure first (e.g. the compiler's defaults)."""
        return []

    def objective(self) -> Objective:
        """What to optimise; the default minimises Result.time."""
        from ensemble.objective import Minimize

        return Minimize("time")

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        """Add app-specific flags; their values end up in ``self.args``."""

    @property
    def has_compile(self) -> bool:
        """True when the app splits its work into compile() + run_compiled()."""
        return type(self).compile is not TunerApp.compile

    # -- entry point -----------------------------------------------------------
    @classmethod
    def main(cls, argv: Sequence[str] | None = None) -> int:
        """Parse the standard flags plus the app's, tune, print the best config.

        Returns the process exit status (0 on success); errors the user can fix
        are printed as one line, not a traceback.
        """
        from ensemble.cli import run_app_main

        status = run_app_main(cls, list(sys.argv[1:] if argv is None else argv))
        return status


def app_reference(app_class: type) -> str:
    """An import reference that another process can load: ``module:Class``.

    Apps defined in a script run as ``python myapp.py`` live in ``__main__``,
    which another process cannot import; for those the script's absolute path
    is stored instead (``/path/myapp.py:Class``).
    """
    module = app_class.__module__
    name = app_class.__qualname__
    if module == "__main__" or module.startswith(("__", _SCRIPT_PREFIX)):
        path = inspect.getsourcefile(app_class) or getattr(sys.modules.get(module), "__file__", None)
        if path:
            return f"{os.path.abspath(path)}:{name}"
    return f"{module}:{name}"


def load_app_class(reference: str) -> type:
    """Load an app class from ``module:Class``, ``path/to/file.py:Class`` or ``module``.

    With no ``:Class`` part the module must hold exactly one TunerApp subclass
    (or an ``APP`` attribute naming it). A registered app name (entry point
    group ``ensemble.apps``) is tried through ensemble.registry as well.
    """
    import importlib
    import importlib.util

    from ensemble.errors import EnsembleError

    if ":" not in reference and "." not in reference:
        from ensemble import registry

        if reference in registry.app_names():
            return registry.load_app(reference)  # type: ignore[no-any-return]
    module_part, _, attr = reference.partition(":")
    if module_part.endswith(".py") or os.sep in module_part:
        path = os.path.abspath(module_part)
        if not os.path.exists(path):
            raise EnsembleError(f"app {reference!r}: no file {path}; give an existing script path")
        mod_name = _SCRIPT_PREFIX + os.path.splitext(os.path.basename(path))[0]
        module = sys.modules.get(mod_name)
        if module is None or getattr(module, "__file__", None) != path:
            spec = importlib.util.spec_from_file_location(mod_name, path)
            assert spec is not None and spec.loader is not None
            module = importlib.util.module_from_spec(spec)
            sys.modules[mod_name] = module
            directory = os.path.dirname(path)
            if directory not in sys.path:
                sys.path.insert(0, directory)
            spec.loader.exec_module(module)
    else:
        try:
            module = importlib.import_module(module_part)
        except ModuleNotFoundError as exc:
            if exc.name and not module_part.startswith(exc.name):
                raise  # the app module exists but one of its imports is missing
            raise EnsembleError(
                f"app {reference!r}: cannot import module {module_part!r} ({exc}); give "
                "'package.module:Class' importable from the current directory, a path to a .py file, "
                "or a registered app name"
            ) from exc
    if attr:
        obj: Any = module
        for part in attr.split("."):
            obj = getattr(obj, part, None)
            if obj is None:
                raise EnsembleError(f"app {reference!r}: module has no attribute {attr!r}")
        if not isinstance(obj, type):
            raise EnsembleError(f"app {reference!r}: {attr!r} is not a class")
        return obj
    named = getattr(module, "APP", None)
    if isinstance(named, type):
        return named
    candidates = [
        v for v in vars(module).values()
        if isinstance(v, type) and v.__module__ == module.__name__ and _looks_like_app(v)
    ]
    if len(candidates) != 1:
        raise EnsembleError(
            f"app {reference!r}: found {len(candidates)} app classes; write 'module:Class' to choose one"
        )
    return candidates[0]


def _looks_like_app(cls: type) -> bool:
    if issubclass(cls, TunerApp) and cls is not TunerApp:
        return True
    # OpenTuner-style apps (ensemble.compat.opentuner.MeasurementInterface)
    return any(b.__name__ == "MeasurementInterface" for b in cls.__mro__[1:])
