"""TunerApp: the class a user subclasses to tune something.

Why a base class with plain methods: the user writes ``space()`` and
``run(config, limit)`` and nothing else; everything about searching, storing
and measuring in parallel lives in the drivers, which only call these methods
(DESIGN.md, "The app API").
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ensemble.objective import Objective
    from ensemble.result import Result
    from ensemble.space import SearchSpace

__all__ = ["TunerApp"]  # app_reference, load_app_class: ensemble.driver.apps (still importable here)


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

    #: seconds one trial may take when the user gives no ``--trial-limit``
    #: (None: no limit); e.g. a synthesis flow whose bad flags run for minutes
    default_trial_limit: float | None = None

    def check_environment(self) -> None:
        """Optional: raise an EnsembleError when something this app needs is missing.

        Called once before the first trial (``RunSession.prepare``), so a
        missing backend or tool stops the run at start with the install
        command instead of failing every trial.
        """

    # -- entry point -----------------------------------------------------------
    @classmethod
    def main(cls, argv: Sequence[str] | None = None, *, exit: bool = True) -> int:
        """Parse the standard flags plus the app's, tune, print the best config, exit with the status.

        Like ``unittest.main()``: ``sys.exit(status)`` with 0 only when the run
        succeeded (at least one successful trial); a mistake the user can fix
        is one line on stderr and status 2; a run where every trial failed is
        status 1, after the most common failure reasons.  ``exit=False``
        returns the status instead (for callers that go on).
        """
        from ensemble.cli import run_app_main

        status = run_app_main(cls, list(sys.argv[1:] if argv is None else argv))
        if exit:
            sys.exit(status)
        return status


def __getattr__(name: str) -> Any:
    """``app_reference`` and ``load_app_class`` moved to ensemble.driver.apps; still importable from here."""
    if name in ("app_reference", "load_app_class"):
        from ensemble.driver import apps

        return getattr(apps, name)
    raise AttributeError(f"module 'ensemble.app' has no attribute {name!r}")
