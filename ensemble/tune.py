"""Tuning from plain Python: ``ensemble.tune(...)`` and the ask/tell ``Tuner``.

Why both: ``tune`` is for "here is a function, find its best input" without a
command line; ``Tuner`` is for users who own the loop (a notebook, a job
scheduler, a simulator). Both go through the same drivers and database states
as the command line, so a run started here can be inspected with
``ensemble-tuner best --database URL`` and resumed.
"""

from __future__ import annotations

import inspect
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Self

from ensemble.app import TunerApp
from ensemble.driver.measure import MeasurementDriver, worker_name
from ensemble.driver.outcome import coerce_result
from ensemble.driver.records import row_config
from ensemble.driver.session import RunSession, TuneResult, run_app
from ensemble.errors import ConfigurationError, EnsembleError
from ensemble.settings import RunSettings

if TYPE_CHECKING:  # pragma: no cover
    from ensemble.storage.base import BaseStorage

__all__ = ["FunctionApp", "TuneResult", "Tuner", "tune"]


class FunctionApp(TunerApp):
    """A TunerApp around a function ``f(config)`` or ``f(config, limit)``."""

    def __init__(self, function: Callable[..., Any], space: Any, objective: Any = None) -> None:
        super().__init__()
        self._function = function
        self._space = space
        self._objective = objective
        try:
            params = inspect.signature(function).parameters
            self._takes_limit = len(params) >= 2
        except (TypeError, ValueError):
            self._takes_limit = False

    def space(self) -> Any:
        return self._space

    def objective(self) -> Any:
        return self._objective if self._objective is not None else super().objective()

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        return self._function(config, limit) if self._takes_limit else self._function(config)

    @property
    def function(self) -> Callable[..., Any]:
        """The wrapped function (its module and name make the run's app reference)."""
        return self._function


def tune(app_or_function: Any, space: Any = None, *, objective: Any = None,
         seed_configurations: list[dict[str, Any]] | None = None, **settings: Any) -> TuneResult:
    """Tune a TunerApp (instance or class) or a function over ``space``.

    Keyword arguments are RunSettings fields (``test_limit=100``,
    ``database="sqlite:///t.db"``, ``technique="Random"``, ``parallelism=4``...).
    At least one of test_limit, stop_after or target is needed unless the space
    is small enough to exhaust.
    """
    if isinstance(app_or_function, type) and issubclass(app_or_function, TunerApp):
        app = app_or_function()
    elif isinstance(app_or_function, TunerApp):
        app = app_or_function
    elif callable(app_or_function):
        if space is None:
            raise ConfigurationError("tune(function, space=...): give the SearchSpace to tune over")
        app = FunctionApp(app_or_function, space, objective)
    else:
        raise ConfigurationError(
            f"tune({app_or_function!r}): give a TunerApp (class or instance) or a function"
        )
    if seed_configurations:
        seeds = list(seed_configurations)
        app.seed_configurations = lambda: seeds  # type: ignore[method-assign]
    settings.setdefault("quiet", True)
    if isinstance(app, FunctionApp) and settings.get("worker_mode") == "process":
        raise ConfigurationError("tune(function, worker_mode='process'): wrap the function in a "
                                 "TunerApp subclass in an importable module for process workers")
    ref = None
    if isinstance(app, FunctionApp):
        fn = app.function
        ref = f"{getattr(fn, '__module__', '_')}:{getattr(fn, '__qualname__', 'function')}"
    return run_app(app, RunSettings(**settings), app_ref=ref)


class Tuner:
    """Ask/tell tuning: ``config = tuner.ask()``, measure it, ``tuner.tell(config, value)``.

    Every ask is a request in the database (RUNNING, claimed by this object)
    and every tell commits its result, exactly as a measurement worker would.
    The run is set up by the same :class:`~ensemble.driver.session.RunSession`
    as every other entry point (seed files, resume, run status, results log).
    ``technique`` is a registry name (with ``technique_options``) or a
    technique object the caller built (a subclass of
    :class:`~ensemble.technique.Technique`, configured and not yet bound),
    for users who keep a reference to inspect its state during the run.
    """

    def __init__(self, space: Any, *, objective: Any = None, **settings: Any) -> None:
        from ensemble.objective import Minimize
        from ensemble.technique import Technique

        given = settings.get("technique")
        instance: Technique | None = None
        if given is not None and not isinstance(given, str):
            if not isinstance(given, Technique):
                raise ConfigurationError(f"technique={given!r}: give a registry name such as 'default' or an "
                                         "instance of an ensemble.technique.Technique subclass")
            instance = given
            settings["technique"] = str(getattr(given, "name", type(given).__name__))
        self.settings = RunSettings(**settings)
        self.space = space
        self.objective = objective if objective is not None else Minimize("time")
        self._session = RunSession(FunctionApp(_told_not_run, space, self.objective), self.settings,
                                   app_ref="ensemble.tune:Tuner", technique=instance)
        self._session.prepare()
        self._session.check_processes()
        handle = self._session.open()
        self.run_id, self.run_name = handle.run_id, handle.name
        self._search = self._session.start_search()
        self.technique = self._search.technique
        assert self._session.storage is not None
        self.storage: BaseStorage = self._session.storage
        self._worker = worker_name("asktell")
        self._recorder = MeasurementDriver(self.storage, self.run_id, None, self.objective, worker=self._worker)
        self._asked: dict[str, list[int]] = {}
        self._closed = False

    @property
    def done(self) -> bool:
        """True once a stop rule (test_limit, stop_after, target) holds."""
        return self._search.done

    def ask(self) -> dict[str, Any]:
        """The next configuration to measure; raises EnsembleError when the run is over."""
        for _ in range(100):
            self._search.set_workers(sum(len(v) for v in self._asked.values()) + 1)
            self._search.step()
            if self._search.done:
                raise EnsembleError(f"the run is over ({self._search.status.stop_reason}); read tuner.best")
            claims = self.storage.claim(self.run_id, self._worker, 1)
            if claims:
                config = row_config(claims[0])
                self._asked.setdefault(self.space.config_hash(config), []).append(claims[0].request_id)
                return config
        raise EnsembleError("the technique proposes nothing until asked configurations are told; "
                            "call tell(config, value) for the configurations you asked for")

    def tell(self, config: dict[str, Any], value: Any) -> None:
        """Record the measurement of an asked configuration (float or Result)."""
        ids = self._asked.get(self.space.config_hash(config))
        if not ids:
            raise ConfigurationError(f"tell({config!r}): this configuration was not asked for (or told twice)")
        rid = ids.pop(0)
        # the cost of a told result is unknown unless the Result says it (Result(cost=...))
        self._recorder.record(rid, coerce_result(value), None)
        self._search.collect()
        self._search.step()

    @property
    def best(self) -> tuple[dict[str, Any] | None, float]:
        """(best configuration, its objective scalar) so far."""
        st = self._search.status
        return st.best_config, st.best_value if st.best_config is not None else math.inf

    def result(self) -> TuneResult:
        """The run's summary, as ``ensemble.tune`` returns it."""
        return self._session.summary()

    def close(self) -> None:
        """Mark the search finished (attached workers stop) and the run finished or interrupted."""
        if not self._closed:
            self._closed = True
            self._session.end_search()
            self._session.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _told_not_run(config: dict[str, Any]) -> Any:  # pragma: no cover - ask/tell measures outside
    raise EnsembleError("an ask/tell Tuner measures nothing itself; call tell(config, value)")
