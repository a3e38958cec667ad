"""One run session: everything about setting up, finishing and summarising a tuning run.

Why one object: a run can be started from the command line (``TunerApp.main``,
``ensemble-tuner run``), from Python (``ensemble.tune``), by a user who owns
the loop (``ensemble.Tuner``), under ``mpirun`` (one search for every rank, or
one per rank) and through the OpenTuner compatibility layer.  When each of
those set up its run itself, features existed in one path and were missing
in another (seed files and the results log under MPI, the run's status).  Now
every entry point builds a :class:`RunSession`, and only the *loop* that moves
configurations between the search driver and the measurement drivers differs
(``ensemble.driver.loops`` and ``ensemble.driver.mpi_loops``).

The phases, in order:

1. :meth:`RunSession.prepare`: check everything that can be checked without
   writing (space, objective, seed configurations and seed files, technique
   name, settings against the store); a mistake fails here, before the
   database is touched.
2. :meth:`RunSession.open`: open the store, create or resume the run
   (refusing a taken name without ``--resume``), hand back requests left
   RUNNING by a dead job, mark the run "running".  Under MPI only rank 0
   opens; the others :meth:`RunSession.attach` to what it opened.
3. :meth:`RunSession.start_search`: the search driver over this run, its
   technique restored from the history on resume, seeds queued first, the
   results log attached.
4. :meth:`RunSession.end_search`: withdraw unclaimed requests, record why the
   search stopped, mark the run "finished" or "interrupted".
5. :meth:`RunSession.summary` and :meth:`RunSession.write_report`: the result
   a caller gets back, read from the database (so it is the same whichever
   loop or how many search drivers ran).
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import math
from typing import IO, TYPE_CHECKING, Any

import numpy as np

from ensemble.driver.runinfo import RunHandle, TuneResult
from ensemble.driver.search import SearchDriver, SearchOptions
from ensemble.errors import (
    ConfigurationError,
    EnsembleError,
    RunExistsError,
    SpaceError,
)
from ensemble.result import TrialState
from ensemble.settings import RunSettings, SettingsError

if TYPE_CHECKING:  # pragma: no cover
    from ensemble.driver.channel import SameThreadChannel
    from ensemble.objective import Objective
    from ensemble.space import SearchSpace
    from ensemble.storage.base import BaseStorage
    from ensemble.technique import Technique, Trial

__all__ = ["RunHandle", "RunNotFoundError", "RunSession", "TuneResult", "failure_reasons", "load_seed_files", "make_technique", "run_app"]

_log = logging.getLogger("ensemble.driver")


def load_seed_files(paths: list[str]) -> list[dict[str, Any]]:
    """Configurations from ``--seed-configuration`` files (one object or a list per file)."""
    out: list[dict[str, Any]] = []
    for path in paths:
        try:
            with open(path, encoding="utf-8") as fh:
                data = json.load(fh)
        except (OSError, ValueError) as exc:
            raise ConfigurationError(
                f"--seed-configuration {path!r}: cannot read a JSON configuration ({exc}); "
                'give a file holding one object like {"wx": 16} or a list of them'
            ) from exc
        out.extend(data if isinstance(data, list) else [data])
    return out


def make_technique(settings: RunSettings, space: SearchSpace, *, seed: int | None = None) -> Technique:
    """The technique named in settings (a registry name or 'module:attr'), bound to ``space``.

    ``seed`` overrides ``settings.seed`` (MPI per-rank searches use seed + rank).
    """
    from ensemble import registry

    seed = settings.seed if seed is None else seed
    name = settings.technique
    if ":" in name and name not in registry.technique_names():
        technique = registry.resolve(name)(seed=seed, **settings.technique_options)
    else:
        technique = registry.create_technique(name, seed=seed, **settings.technique_options)
    technique.bind(space, budget=settings.test_limit, rng=np.random.default_rng(seed))
    return technique  # type: ignore[no-any-return]


class RunSession:
    """One tuning run of ``app`` under ``settings``; see the module docstring for the phases.

    ``technique`` replaces the registry lookup (tests, ask/tell); ``storage``
    an already open store (the caller then closes it).  :meth:`run` picks the
    loop from the settings and the MPI launcher and returns the TuneResult.
    """

    def __init__(self, app: Any, settings: RunSettings, *, app_ref: str | None = None,
                 app_argv: list[str] | None = None, technique: Technique | None = None,
                 storage: BaseStorage | None = None) -> None:
        from ensemble.driver.apps import app_reference

        if not isinstance(settings, RunSettings):
            raise SettingsError(f"settings={settings!r}: pass an ensemble.RunSettings")
        self.app = app
        self.settings = settings
        self.app_ref = app_ref or app_reference(type(app))
        self.app_argv = list(app_argv or [])
        self._given_technique = technique
        self._given_storage = storage
        self.storage: BaseStorage | None = storage
        self.space: SearchSpace | None = None
        self.objective: Objective | None = None
        self.seeds: list[dict[str, Any]] = []
        self.handle: RunHandle | None = None
        self.search: SearchDriver | None = None
        self._log_fh: IO[str] | None = None

    # -- 1. checks before any write --------------------------------------------------
    def prepare(self) -> None:
        """Check the space, objective, seeds, technique, settings and paths; nothing is written.

        The app's own ``check_environment()`` runs first (a missing backend
        fails here, not as one FAILED trial after another); its
        ``default_trial_limit`` applies when no ``--trial-limit`` was given.
        """
        self._preflight()
        app_space = self.app.space()
        if not list(getattr(app_space, "params", [])):
            raise SpaceError("space(): the search space has no parameters; add some with SearchSpace().add(...)")
        space = app_space.narrowed(self.settings.require)  # a copy, only when --require gives expressions
        try:
            space.sample(np.random.default_rng(self.settings.seed), 1)   # InfeasibleSpaceError names the reason
        except SpaceError as exc:
            if not self.settings.require:
                raise
            raise ConfigurationError(f"{_require_flags(self.settings.require)}: {exc}; loosen or drop a "
                                     f"--require") from exc
        self.space = space
        self.objective = self.app.objective()
        app_seeds = list(self.app.seed_configurations() or [])
        seeds = app_seeds + load_seed_files(list(self.settings.seed_configurations))
        kept = []
        for i, seed in enumerate(seeds):
            if not isinstance(seed, dict):
                raise ConfigurationError(f"seed configuration #{i} is {type(seed).__name__}; give a dict")
            try:
                app_space.check(seed)
            except ConfigurationError as exc:  # say which seed, and where seeds come from, before the space's words
                raise ConfigurationError(
                    f"seed configuration #{i} is not a configuration of this space: {exc}. Fix it where the seeds "
                    f"come from (the app's seed_configurations(), tune(seed_configurations=...) or a seed file); "
                    f"a space that gained a parameter needs it in every seed") from exc
            outside = [] if space is app_space else space.violated(seed)
            if outside and i >= len(app_seeds):  # the user's own seed file and --require disagree: say so
                raise ConfigurationError(f"seed configuration #{i} (a seed file) is outside {', '.join(outside)}; "
                                         f"drop the seed file or the --require")
            if outside:  # the app's defaults: a run that excludes them goes on without them
                _log.warning("seed configuration #%d %s is outside %s: left out", i,
                             json.dumps(seed, sort_keys=True, default=str), ", ".join(outside))
                continue
            kept.append(dict(seed))
        self.seeds = kept
        if self._given_technique is None:
            from ensemble import registry

            name = self.settings.technique
            if ":" not in name:
                registry.TECHNIQUE_REGISTRY.target(name)   # unknown name: TechniqueError listing the known ones

    def _preflight(self) -> None:
        from ensemble.driver import preflight

        s = self.settings
        changes: dict[str, Any] = {}
        url = preflight.existing_database(s.database, what="--resume") if s.resume and self._given_storage is None \
            else preflight.database_url(s.database)
        if url != s.database:
            changes["database"] = url
        preflight.check_report_dir(s.report_dir)
        preflight.check_results_log(s.results_log)
        check = getattr(self.app, "check_environment", None)
        if callable(check):
            check()
        default_limit = getattr(self.app, "default_trial_limit", None)
        if s.trial_limit is None and default_limit is not None:
            changes["trial_limit"] = float(default_limit)
        if changes:
            self.settings = s.replace(**changes)

    def check_processes(self, *, mpi_size: int = 1) -> None:
        """Refuse settings that need other processes when they cannot work (before any write)."""
        s = self.settings
        needs_processes = (s.worker_mode == "process" and s.parallelism > 1) or mpi_size > 1
        if mpi_size <= 1 and s.parallelism >= 1:
            from ensemble.driver.preflight import thread_limit_notice

            thread_limit_notice(s)
        if s.worker_mode == "process" and s.parallelism > 1 and self.app_ref.startswith("_"):
            raise SettingsError(f"worker_mode='process' needs an importable app; {self.app_ref!r} is not")
        if needs_processes and _is_memory_url(s.database):
            what = f"{mpi_size} MPI ranks" if mpi_size > 1 else "worker_mode='process'"
            raise SettingsError(
                f"database={s.database!r} is an in-memory store, which {what} cannot share; "
                "use a SQLite file (e.g. --database sqlite:///tuning.db) or PostgreSQL"
            )

    # -- 2. the run ------------------------------------------------------------------
    def open_storage(self) -> BaseStorage:
        if self.storage is None:
            from ensemble.storage import open_storage

            self.storage = open_storage(self.settings.database, busy_timeout_s=self.settings.busy_timeout)
        return self.storage

    def open(self, *, reclaim_all: bool = False) -> RunHandle:
        """Create or resume the run; hand back requests left RUNNING by a dead job; mark it "running".

        ``reclaim_all``: a new ``mpirun`` means the old job is gone, so every
        RUNNING request goes back to WAITING at once.
        """
        assert self.space is not None and self.objective is not None, "call prepare() first"
        storage = self.open_storage()
        run_id, name, resumed = _find_or_create_run(storage, self.settings, app_ref=self.app_ref,
                                                    space=self.space, objective=self.objective,
                                                    app_argv=self.app_argv)
        reclaimed = 0
        if resumed:
            reclaimed = storage.requeue_stale(run_id, 0.0) if reclaim_all else \
                _requeue_dead_local(storage, run_id, self.settings.heartbeat_timeout)
        storage.put_state(run_id, "search", {"done": False})
        storage.set_run_status(run_id, "running")
        self.handle = RunHandle(run_id, name, resumed, reclaimed)
        return self.handle

    def attach(self, handle: RunHandle) -> None:
        """Work on a run another process opened (MPI ranks other than 0)."""
        self.open_storage()
        self.handle = handle

    @property
    def run_id(self) -> int:
        if self.handle is None:
            raise EnsembleError("the session has no run yet; call open() or attach() first")
        return self.handle.run_id

    # -- 3. the search ---------------------------------------------------------------
    def start_search(self, *, workers: int = 1, shared: bool = False, seed: int | None = None,
                     queue_seeds: bool = True, channel: SameThreadChannel | None = None,
                     log_trials: bool = True, poll_interval: float = 0.0) -> SearchDriver:
        """The search driver of this run, restored on resume, with the seeds queued first on a new run."""
        assert self.space is not None and self.handle is not None and self.storage is not None
        if self._given_technique is not None:
            technique = self._given_technique
            s = self.settings.seed if seed is None else seed
            technique.bind(self.space, budget=self.settings.test_limit, rng=np.random.default_rng(s))
        else:
            technique = make_technique(self.settings, self.space, seed=seed)
        options = SearchOptions.from_settings(self.settings, workers=workers, shared=shared,
                                              poll_interval=poll_interval)
        search = SearchDriver(self.storage, self.run_id, self.space, technique, options, channel=channel)
        if self.handle.resumed:
            restored = search.restore()
            _log.info("resuming run %r: %d finished trials restored", self.handle.name, restored)
        elif queue_seeds and self.seeds:
            search.add_seeds(self.seeds)
        if log_trials and self.settings.results_log:
            self._log_fh = open(self.settings.results_log, "a", encoding="utf-8")  # noqa: SIM115 - closed by end_search()
            fh = self._log_fh
            search.listeners.append(lambda t: _log_trial(fh, t))
        self.search = search
        return search

    # -- 4. the end ------------------------------------------------------------------
    def end_search(self, *, finished: bool | None = None) -> None:
        """Withdraw the unclaimed queue, record the stop, mark the run finished/interrupted, close the log."""
        search = self.search
        try:
            if search is not None:
                search.finish()
            if self.storage is not None and self.handle is not None:
                done = finished if finished is not None else bool(search is not None and search.done)
                self.storage.set_run_status(self.run_id, "finished" if done else "interrupted")
        finally:
            self.close_log()

    def close_log(self) -> None:
        if self._log_fh is not None:
            self._log_fh.close()
            self._log_fh = None

    def close(self) -> None:
        """Close the store if this session opened it."""
        self.close_log()
        if self.storage is not None and self._given_storage is None:
            self.storage.close()

    # -- 5. what the caller gets -----------------------------------------------------
    def summary(self, *, stop_reason: str | None = None) -> TuneResult:
        """The run's result, read from the database (the same whichever loop ran)."""
        assert self.storage is not None and self.handle is not None
        rows = self.storage.trials(self.run_id)
        best = None
        for r in rows:
            usable = r.state == TrialState.OK and not r.duplicate and r.value is not None and not math.isnan(r.value)
            if usable and (best is None or r.value < best.value):  # type: ignore[operator]
                best = r
        counts = self.storage.counts(self.run_id)
        failures = sum(counts.get(s, 0) for s in (TrialState.FAILED, TrialState.TIMEOUT, TrialState.INVALID)) - sum(
            1 for r in rows if r.duplicate and r.state != TrialState.OK)
        if stop_reason is None and self.search is not None:
            stop_reason = self.search.status.stop_reason
        extra: dict[str, Any] = {}
        if best is None:
            extra["failure_reasons"] = failure_reasons(rows)
        return TuneResult(
            best_config=best.config if best is not None else None,
            best_value=self._user_value(best) if best is not None else None,
            evaluations=int(counts.get("unique", 0)), run_name=self.handle.name, database=self.settings.database,
            trials=int(counts.get("measured", 0) + counts.get("duplicates", 0)), failures=int(failures),
            duplicates=int(counts.get("duplicates", 0)),
            best_technique=best.technique if best is not None else None, stop_reason=stop_reason,
            extra=extra,
        )

    def _user_value(self, row: Any) -> float:
        """The objective's user-facing value of a row (e.g. a positive throughput)."""
        try:
            from ensemble.result import Result

            metrics = dict(row.metrics or {})
            return float(self.objective.value(Result(time=metrics.get("time"), metrics=metrics)))  # type: ignore[union-attr]
        except Exception:  # noqa: BLE001 - fall back to the ranking scalar
            return float(row.value)

    def write_report(self, result: TuneResult) -> None:
        """Write the report files when ``report_dir`` is set."""
        if self.settings.report_dir and self.storage is not None:
            from ensemble.report import write_report

            try:
                write_report(self.storage, self.run_id, self.settings.report_dir, objective=self.objective)
            except OSError as exc:
                raise ConfigurationError(
                    f"--report {self.settings.report_dir!r}: cannot write the report ({exc}); every result is "
                    f"in {self.settings.database}: write it later with ensemble-tuner report --database "
                    f"{self.settings.database} --run-name {self.handle.name if self.handle else ''} --out DIR"
                ) from exc
            result.report_dir = self.settings.report_dir

    # -- the whole run ---------------------------------------------------------------
    def run(self) -> TuneResult:
        """Tune to the end with the loop the settings (and an MPI launcher) call for."""
        from ensemble import mpi

        info = mpi.detect()
        if info is not None and info.size > 1:
            from ensemble.driver.mpi_loops import run_mpi

            return run_mpi(self, info)
        from ensemble.driver.loops import run_local

        return run_local(self)


def run_app(app: Any, settings: RunSettings, *, app_ref: str | None = None, app_argv: list[str] | None = None,
            technique: Technique | None = None, storage: BaseStorage | None = None) -> TuneResult:
    """Tune ``app`` under ``settings`` through a :class:`RunSession`; returns the TuneResult."""
    return RunSession(app, settings, app_ref=app_ref, app_argv=app_argv, technique=technique,
                      storage=storage).run()


# -- helpers ------------------------------------------------------------------------------

def _is_memory_url(url: str) -> bool:
    return url.split(":", 1)[0].lower() == "memory"


def _require_flags(exprs: list[str]) -> str:
    return " ".join(f"--require {e!r}" for e in exprs)


def _find_or_create_run(storage: BaseStorage, settings: RunSettings, *, app_ref: str, space: SearchSpace,
                        objective: Objective, app_argv: list[str]) -> tuple[int, str, bool]:
    """(run_id, name, resumed); refuses an existing name without ``resume`` (RunExistsError naming both fixes)."""
    space_hash = space.space_hash()
    name = settings.run_name
    if name is None and settings.resume:
        mine = [r for r in storage.list_runs() if r.app == app_ref]
        if not mine:
            raise RunNotFoundError(
                f"--resume: {settings.database} has no run of {app_ref}; {_runs_there(storage)}. "
                "Start a new run without --resume, or give --run-name NAME of a run listed"
            )
        name = max(mine, key=lambda r: (r.created_at, r.id)).name
    if name is None:
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S-%f")
        name = f"{app_ref.rsplit(':', 1)[-1].rsplit('/', 1)[-1]}-{stamp}"
    record = storage.get_run(name)
    if record is not None:
        if not settings.resume:
            what = "the same space" if record.space_hash == space_hash else "a different space"
            raise RunExistsError(
                f"run_name={name!r} already exists in {settings.database} with {what}; add --resume "
                "to continue it, or give a new --run-name"
            )
        _same_require_on_resume(record, settings, name)
        if record.space_hash != space_hash:
            _log.warning("run %r was made with a different space; old configurations outside the "
                         "new space are ignored by the technique", name)
        return int(record.id), name, True
    if settings.resume:
        raise RunNotFoundError(
            f"--resume --run-name {name!r}: no such run in {settings.database}; {_runs_there(storage)}. "
            "Check the name, or drop --resume to start a new run"
        )
    settings_json = settings.to_json()
    settings_json["app_argv"] = list(app_argv)
    run_id = storage.create_run(
        name, app=app_ref, space_json=json.dumps(space.to_json(), sort_keys=True), space_hash=space_hash,
        objective_json=json.dumps(objective.to_json(), sort_keys=True),
        settings_json=json.dumps(settings_json, sort_keys=True, default=str),
    )
    return int(run_id), name, False


def failure_reasons(rows: Any, top: int = 5) -> list[tuple[str, int]]:
    """The most common (state: reason, count) pairs of the failed trials, most common first.

    Reasons are cut to their first line (a traceback's last frame varies less
    than its text) so that the same mistake is counted once.
    """
    from collections import Counter

    counts: Counter[str] = Counter()
    for r in rows:
        if r.duplicate or r.state not in (TrialState.FAILED, TrialState.TIMEOUT, TrialState.INVALID):
            continue
        reason = (r.reason or "no reason given").strip().splitlines()[0][:200] if (r.reason or "").strip() \
            else "no reason given"
        counts[f"{r.state}: {reason}"] += 1
    return counts.most_common(top)


class RunNotFoundError(ConfigurationError):
    """``--resume`` names a run (or a database) that does not hold it."""


def _same_require_on_resume(record: Any, settings: RunSettings, name: str) -> None:
    """Refuse ``--resume`` with other ``--require`` expressions than the run was made with.

    Why refuse rather than warn (as for an app whose space changed): the
    expressions are stored with the run and the report prints them beside the
    best configuration, which must satisfy them; a run continued under other
    expressions would have trials, a best and a report that disagree.  The
    fix is one of two commands, and the message names both.
    """
    try:
        stored = list(json.loads(record.settings_json or "{}").get("require") or [])
    except (TypeError, ValueError, AttributeError):
        return
    given = list(settings.require or [])
    if stored != given:
        def show(exprs: list[str]) -> str:
            return " ".join(f"--require {e!r}" for e in exprs) if exprs else "no --require"

        raise SettingsError(
            f"--resume --run-name {name!r}: the run was made with {show(stored)}, this command gives "
            f"{show(given)}; resume with the same expressions, or start a new run (another --run-name) "
            "to search the other space"
        )


def _runs_there(storage: BaseStorage) -> str:
    runs = sorted(storage.list_runs(), key=lambda r: (r.created_at, r.id))
    if not runs:
        return "it holds no runs"
    names = ", ".join(repr(r.name) for r in runs[-10:])
    more = f" (the last 10 of {len(runs)}; all: ensemble-tuner runs --database URL)" if len(runs) > 10 else ""
    return f"runs there: {names}{more}"


def _requeue_dead_local(storage: BaseStorage, run_id: int, heartbeat_timeout: float) -> int:
    """On resume: hand back requests left RUNNING by dead workers; returns how many.

    Requests whose worker was a process of this host that no longer exists are
    requeued at once (the usual case after kill -9); otherwise only those whose
    heartbeat is older than ``heartbeat_timeout`` (a live remote worker keeps its trial).
    """
    import os
    import socket

    running = [r for r in storage.trials(run_id) if r.state == TrialState.RUNNING]
    host = socket.gethostname()

    def dead(worker: str | None) -> bool:
        parts = (worker or "").split(":")
        if len(parts) < 2 or parts[0] != host or not parts[1].isdigit():
            return False
        try:
            os.kill(int(parts[1]), 0)
        except ProcessLookupError:
            return True
        except OSError:
            return False
        return False

    if running and all(dead(r.worker) for r in running):
        n = storage.requeue_stale(run_id, 0.0)
    else:
        n = storage.requeue_stale(run_id, heartbeat_timeout)
    if n:
        _log.warning("requeued %d request(s) left RUNNING by a worker that is gone", n)
    return n


def _log_trial(fh: IO[str], trial: Trial) -> None:
    fh.write(json.dumps({
        "evaluation": trial.evaluation, "state": str(trial.state), "technique": trial.technique,
        "value": None if trial.value == float("inf") else trial.value, "duplicate": trial.duplicate,
        "config": trial.config,
    }, sort_keys=True) + "\n")
    fh.flush()
