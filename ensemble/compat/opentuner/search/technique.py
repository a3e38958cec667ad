"""``opentuner.search.technique``: user techniques written the OpenTuner way.

Why keep OpenTuner's generator style: a technique written as
``main_generator()`` that ``yield``s configurations and reads their results
after the ``yield`` is how OpenTuner users write search code (Nelder-Mead,
pattern search); ``register(MyTechnique())`` makes it selectable with
``--technique MyTechnique``. Such an object runs inside our drivers through
``ensemble.compat.opentuner._technique_adapter.OpenTunerTechnique``, which
hands it a small driver (``get_configuration``, ``has_results``,
``best_result``, ``results_query``) and turns its configurations into ours.

``register()`` keeps OpenTuner's module-level registry (apps call it at
import time); ``ensemble-tuner opentuner`` empties it when its run ends.
"""

from __future__ import annotations

import argparse
import logging
from collections.abc import Iterator
from typing import Any

from ensemble.compat.opentuner import _flags
from ensemble.compat.opentuner._errors import UnsupportedError
from ensemble.compat.opentuner.resultsdb.models import Configuration

__all__ = [
    "AsyncProceduralSearchTechnique",
    "PureRandom",
    "SearchTechnique",
    "SearchTechniqueBase",
    "SequentialSearchTechnique",
    "all_techniques",
    "argparser",
    "register",
    "register_generator",
]

_log = logging.getLogger("ensemble.compat.opentuner")

#: techniques registered by the app (name -> object), as OpenTuner's ``the_registry``
_REGISTERED: dict[str, Any] = {}


#: OpenTuner's technique flags (``--technique``, ``--list-techniques``), as a parent parser
argparser: argparse.ArgumentParser = _flags.argparsers()[3]


class SearchTechniqueBase:
    """Minimal interface: a name, a driver, and configurations to test."""

    def __init__(self, name: str | None = None, **_: Any) -> None:
        self.name = name or self.default_name()

    def default_name(self) -> str:
        return type(self).__name__

    def is_ready(self) -> bool:
        return True

    def handle_requested_result(self, result: Any) -> None:
        """Called with each Result this technique asked for."""


class SearchTechnique(SearchTechniqueBase):
    """Subclass and define desired_configuration() (a config, None for nothing now, False to wait)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.driver: Any = None
        self.manipulator: Any = None
        self.objective: Any = None
        self.request_count = 0

    def set_driver(self, driver: Any) -> None:
        self.driver = driver
        self.manipulator = driver.manipulator
        self.objective = driver.objective

    def desired_configuration(self) -> Any:
        raise NotImplementedError(f"{type(self).__name__}.desired_configuration(): return a configuration")

    def desired_result(self) -> Any:
        return self.desired_configuration()


class PureRandom(SearchTechnique):
    """Random configurations (OpenTuner's PureRandom)."""

    def desired_configuration(self) -> Any:
        return self.manipulator.random()


class AsyncProceduralSearchTechnique(SearchTechnique):
    """Subclass and define main_generator(): ``yield cfg`` to request; ``yield False`` to wait."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.gen: Iterator[Any] | None = None
        self.done = False

    def call_main_generator(self) -> Iterator[Any]:
        return self.main_generator()

    def main_generator(self) -> Iterator[Any]:
        raise NotImplementedError(f"{type(self).__name__}.main_generator(): yield configurations")

    def desired_configuration(self) -> Any:
        if self.gen is None:
            self.gen = self.call_main_generator()
        if not self.done:
            try:
                return next(self.gen)
            except StopIteration:
                self.done = True
        return None

    def is_ready(self) -> bool:
        return not self.done


class SequentialSearchTechnique(AsyncProceduralSearchTechnique):
    """A generator technique whose results are ready right after each ``yield``.

    ``yield cfg`` requests cfg and resumes once it has a result;
    ``self.yield_nonblocking(cfg)`` requests without waiting, and the next
    ``yield`` (``yield None`` to request nothing new) waits for all of them.
    A generator that yields only configurations that already have results
    for ``novelty_threshold`` rounds hands the turn back (``None``), and is
    restarted after ``reset_threshold`` such rounds, as in OpenTuner.
    """

    def __init__(self, novelty_threshold: int = 50, reset_threshold: int = 500, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.pending_tests: list[Any] = []
        self.novelty_threshold = novelty_threshold
        self.reset_threshold = reset_threshold
        self.rounds_since_novel_request = 0

    def yield_nonblocking(self, cfg: Any) -> None:
        if cfg:
            self.pending_tests.append(cfg)

    def call_main_generator(self) -> Iterator[Any]:
        subgen = self.main_generator()
        while True:
            self.rounds_since_novel_request += 1
            if self.rounds_since_novel_request % self.novelty_threshold == 0:
                if self.rounds_since_novel_request > self.reset_threshold:
                    _log.warning("%s asked for nothing new in %d rounds; restarting it", self.name,
                                 self.rounds_since_novel_request)
                    subgen = self.main_generator()
                    self.rounds_since_novel_request = 0
                yield None
            try:
                cfg = next(subgen)
            except StopIteration:
                return
            if cfg:
                self.pending_tests.append(cfg)
            for cfg in self.pending_tests:
                if not self.driver.has_results(cfg):
                    self.rounds_since_novel_request = 0
                    yield cfg
            while True:
                self.pending_tests = [c for c in self.pending_tests if not self.driver.has_results(c)]
                if not self.pending_tests:
                    break
                yield False


def register(technique: Any) -> None:
    """Make ``technique`` (an object) selectable as ``--technique <its name>``."""
    name = getattr(technique, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"register({technique!r}): give a technique object with a name (SearchTechnique(name=...))")
    _REGISTERED[name] = technique


def register_generator(cls: Any, generator_weight: float = 1.0, *args: Any, **kwargs: Any) -> None:
    raise UnsupportedError("technique.register_generator (random bandit generation)",
                           "register(SomeTechnique()) each technique and pick them with --technique")


def all_techniques() -> tuple[list[Any], list[Any]]:
    """(registered technique objects, generators) as OpenTuner returns them."""
    return list(_REGISTERED.values()), []


def registered() -> dict[str, Any]:
    """The techniques registered so far, by name."""
    return dict(_REGISTERED)


def clear_registered() -> None:
    """Forget registered techniques (end of an ``ensemble-tuner opentuner`` run)."""
    _REGISTERED.clear()


def as_configuration(cfg: Any) -> Configuration:
    return cfg if isinstance(cfg, Configuration) else Configuration(cfg)
