"""The import hook: ``opentuner`` and its submodules resolve to this package, for one run only.

Why a context manager that swaps ``sys.modules`` entries: an unmodified app
does ``import opentuner`` / ``from opentuner.search.manipulator import ...``;
for the length of an ``ensemble-tuner opentuner`` run those names must be
ours, and afterwards a real OpenTuner installed in the same environment must
come back exactly as it was (its modules, if already imported, are put
back). A finder placed first on ``sys.meta_path`` refuses OpenTuner modules
we do not provide, at import time (that is, at start-up, before anything is
measured), with the part's name and what to use instead.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.abc
import sys
from collections.abc import Iterator
from typing import Any

from ensemble.compat.opentuner._errors import UnsupportedError

__all__ = ["ALIASES", "UNSUPPORTED", "install_refusal_for_compat_paths", "opentuner_imports"]

_PREFIX = "ensemble.compat."

#: OpenTuner module -> our module of the same role
ALIASES = [
    "opentuner",
    "opentuner.api",
    "opentuner.measurement",
    "opentuner.measurement.interface",
    "opentuner.resultsdb",
    "opentuner.resultsdb.models",
    "opentuner.search",
    "opentuner.search.manipulator",
    "opentuner.search.objective",
    "opentuner.search.technique",
    "opentuner.tuningrunmain",
]

#: OpenTuner modules we do not provide -> the nearest supported way
UNSUPPORTED = {
    "opentuner.resultsdb.connect": "read results with `ensemble-tuner best --database URL` or "
                                   "ensemble.storage.Storage(url)",
    "opentuner.search.driver": "use MeasurementInterface.main(args) or opentuner.api.TuningRunManager",
    "opentuner.measurement.driver": "use MeasurementInterface.main(args) or opentuner.api.TuningRunManager",
    "opentuner.measurement.inputmanager": "tune with the single fixed input (run() gets input=Input())",
    "opentuner.search.plugin": "use --results-log FILE or --report DIR for per-trial output",
    "opentuner.utils": "use `ensemble-tuner report --database URL` for statistics and plots",
}
_TECHNIQUE_MODULES = ("bandittechniques", "differentialevolution", "evolutionarytechniques", "simplextechniques",
                      "patternsearch", "pso", "simulatedannealing", "globalGA", "binaryga",
                      "composableevolutionarytechniques", "metatechniques")


def _instead(fullname: str) -> str:
    for name, instead in UNSUPPORTED.items():
        if fullname == name or fullname.startswith(name + "."):
            return instead
    if fullname.rsplit(".", 1)[-1] in _TECHNIQUE_MODULES:
        return ("pick a built-in technique with --technique NAME (ensemble-tuner --list-techniques), or subclass "
                "opentuner.search.technique.SequentialSearchTechnique and register() it")
    return f"use the modules that are provided: {', '.join(ALIASES)}"


class _RefuseUnsupported(importlib.abc.MetaPathFinder):
    """Finds nothing; raises UnsupportedError for OpenTuner modules outside ALIASES."""

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if (fullname == "opentuner" or fullname.startswith("opentuner.")) and fullname not in ALIASES:
            raise UnsupportedError(f"module {fullname!r}", _instead(fullname))


def _ours() -> list[str]:
    return [name for name in sys.modules if name == "opentuner" or name.startswith("opentuner.")]


@contextlib.contextmanager
def opentuner_imports() -> Iterator[None]:
    """Inside the block, ``import opentuner...`` gives this package; outside, whatever was there before."""
    from ensemble.compat.opentuner.search.technique import clear_registered

    saved = {name: sys.modules.pop(name) for name in _ours()}
    for alias in ALIASES:
        sys.modules[alias] = importlib.import_module(_PREFIX + alias)
    finder = _RefuseUnsupported()
    sys.meta_path.insert(0, finder)
    try:
        yield
    finally:
        sys.meta_path.remove(finder)
        for name in _ours():
            del sys.modules[name]
        sys.modules.update(saved)
        clear_registered()


class _RefuseMissingCompat(importlib.abc.MetaPathFinder):
    """Last on sys.meta_path: ``ensemble.compat.opentuner.<an OpenTuner module we lack>`` gets our error.

    An app with its imports changed asks for e.g.
    ``ensemble.compat.opentuner.search.bandittechniques``; without this it
    would see a bare ModuleNotFoundError instead of what to use instead.
    """

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> None:
        if fullname.startswith(_PREFIX + "opentuner."):
            name = fullname[len(_PREFIX):]
            raise UnsupportedError(f"module {name!r}", _instead(name))


def install_refusal_for_compat_paths() -> None:
    """Append the finder once (it only ever answers for names under ensemble.compat.opentuner)."""
    if not any(isinstance(f, _RefuseMissingCompat) for f in sys.meta_path):
        sys.meta_path.append(_RefuseMissingCompat())
