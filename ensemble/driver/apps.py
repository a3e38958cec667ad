"""Loading an app by reference: ``module:Class``, ``path/to/app.py:Class`` or a registered name.

Why in the driver package and not in ``ensemble.app`` or ``ensemble.cli``:
the command line, worker processes (``--worker-mode process``,
``ensemble-tuner worker``) and MPI ranks all rebuild the same app from the
reference stored with the run; keeping that here lets ``ensemble.app`` hold
only the base class and ``ensemble.cli`` only argparse, with no import circle
between them and the drivers.  Apps are recognised by their base classes'
names (``TunerApp``, OpenTuner's ``MeasurementInterface``), so this module
imports neither.
"""

from __future__ import annotations

import argparse
import inspect
import os
import sys
from typing import Any

__all__ = ["app_reference", "build_app", "load_app_class"]

#: module-name prefix of app scripts loaded by path (load_app_class)
_SCRIPT_PREFIX = "_ensemble_app_"


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
    """A subclass of TunerApp or of OpenTuner's MeasurementInterface (compat layer), not the base itself."""
    return any(b.__name__ in ("TunerApp", "MeasurementInterface") for b in cls.__mro__[1:])


def build_app(app_class: type, app_argv: list[str]) -> Any:
    """Instantiate an app with its own flags parsed from ``app_argv``."""
    parser = argparse.ArgumentParser(add_help=False)
    add = getattr(app_class, "add_arguments", None)
    if add is not None:
        add(parser)
    ns, _ = parser.parse_known_args(app_argv)
    app = app_class(ns)
    adapt = getattr(app, "as_tuner_app", None)
    if callable(adapt):  # OpenTuner-style interfaces (ensemble.compat.opentuner)
        app = adapt()
    app.argv = list(app_argv)
    return app
