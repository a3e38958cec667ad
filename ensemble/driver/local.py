"""Local orchestration: one search driver plus N measurement workers.

Why here and not in the app: ``TunerApp.main``, ``ensemble.tune`` and the CLI
all start a run the same way: validate everything first (space, seeds,
technique, database, run name) so that bad input fails before anything is
written, then run the search loop next to threads or processes that measure.
With one worker the measurement happens in the search thread, through the same
database states (WAITING -> RUNNING -> OK), which keeps the hot path cheap.
"""

from __future__ import annotations

import datetime as _dt
import json
import logging
import multiprocessing
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ensemble.driver.measure import MeasurementDriver, worker_name
from ensemble.driver.search import SearchDriver
from ensemble.errors import ConfigurationError, RunExistsError, SpaceError
from ensemble.settings import RunSettings, SettingsError

__all__ = ["TuneResult", "open_run", "run_app", "serve_worker"]

_log = logging.getLogger("ensemble.driver")

#: with RunSettings.batch > 1, only trials shorter than this (seconds) are batched
FAST_TRIAL_S = 0.05


@dataclass
class TuneResult:
    """What a finished run gives back to Python callers."""

    best_config: dict[str, Any] | None
    best_value: float | None
    evaluations: int
    run_name: str
    database: str
    trials: int = 0
    failures: int = 0
    duplicates: int = 0
    best_technique: str | None = None
    stop_reason: str | None = None
    report_dir: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def _load_seed_files(paths: list[str]) -> list[dict[str, Any]]:
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


def _validated_seeds(space: Any, seeds: list[dict[str, Any]]) -> list[dict[str, Any]]:
    for i, seed in enumerate(seeds):
        if not isinstance(seed, dict):
            raise ConfigurationError(f"seed configuration #{i} is {type(seed).__name__}; give a dict")
        space.check(seed)
    return seeds


def _check_space(space: Any, seed: int | None) -> None:
    if not list(getattr(space, "params", [])):
        raise SpaceError("space(): the search space has no parameters; add some with SearchSpace().add(...)")
    space.sample(np.random.default_rng(seed), 1)  # raises InfeasibleSpaceError with its reason


def open_run(storage: Any, settings: RunSettings, *, app_ref: str, space: Any, objective: Any,
             app_argv: list[str]) -> tuple[int, str, bool]:
    """Find or create the run; returns (run_id, name, resumed).

    Refuses an existing name without ``resume`` (RunExistsError naming both fixes).
    """
    space_hash = space.space_hash()
    name = settings.run_name
    if name is None and settings.resume:
        mine = [r for r in storage.list_runs() if r.app == app_ref]
        if mine:
            name = max(mine, key=lambda r: (r.created_at, r.id)).name
    if name is None:
        stamp = _dt.datetime.now(_dt.UTC).strftime("%Y%m%d-%H%M%S-%f")
        name = f"{app_ref.rsplit(':', 1)[-1]}-{stamp}"
    record = storage.get_run(name)
    if record is not None:
        if not settings.resume:
            what = "the same space" if record.space_hash == space_hash else "a different space"
            raise RunExistsError(
                f"run_name={name!r} already exists in {settings.database} with {what}; add --resume "
                "to continue it, or give a new --run-name"
            )
        if record.space_hash != space_hash:
            _log.warning("run %r was made with a different space; old configurations outside the "
                         "new space are ignored by the technique", name)
        return int(record.id), name, True
    settings_json = settings.to_json()
    settings_json["app_argv"] = list(app_argv)
    run_id = storage.create_run(
        name, app=app_ref, space_json=json.dumps(space.to_json(), sort_keys=True), space_hash=space_hash,
        objective_json=json.dumps(objective.to_json(), sort_keys=True),
        settings_json=json.dumps(settings_json, sort_keys=True, default=str),
    )
    return int(run_id), name, False


def make_technique(settings: RunSettings, space: Any) -> Any:
    """The technique named in settings (a registry name or 'module:attr'), bound to space."""
    from ensemble import registry

    name = settings.technique
    if ":" in name and name not in registry.technique_names():
        technique = registry.resolve(name)(seed=settings.seed, **settings.technique_options)
    else:
        technique = registry.create_technique(name, seed=settings.seed, **settings.technique_options)
    technique.bind(space, budget=settings.test_limit, rng=np.random.default_rng(settings.seed))
    return technique


def run_app(app: Any, settings: RunSettings, *, app_ref: str | None = None,
            app_argv: list[str] | None = None, technique: Any = None,
            storage: Any = None) -> TuneResult:
    """Tune ``app`` under ``settings``; returns the TuneResult.

    Everything that can be refused is checked before the database is written.
    ``technique`` overrides the registry lookup (tests, ask/tell).
    """
    from ensemble.app import app_reference

    app_ref = app_ref or app_reference(type(app))
    space = app.space()
    _check_space(space, settings.seed)
    objective = app.objective()
    seeds = _validated_seeds(space, list(app.seed_configurations() or [])
                             + _load_seed_files(list(settings.seed_configurations)))
    if technique is None:
        technique = make_technique(settings, space)
    else:
        technique.bind(space, budget=settings.test_limit, rng=np.random.default_rng(settings.seed))
    if settings.worker_mode == "process" and settings.parallelism > 1 and app_ref.startswith("_"):
        raise SettingsError(f"worker_mode='process' needs an importable app; {app_ref!r} is not")
    if storage is None:
        from ensemble.storage import Storage

        storage = Storage(settings.database, busy_timeout_s=settings.busy_timeout)
    heartbeat_timeout = settings.heartbeat_timeout
    run_id, name, resumed = open_run(storage, settings, app_ref=app_ref, space=space,
                                     objective=objective, app_argv=list(app_argv or []))
    search = SearchDriver(storage, run_id, space, technique, settings,
                          workers=max(1, settings.parallelism), trial_limit=settings.trial_limit)
    search.stale_after = heartbeat_timeout
    if resumed:
        restored = search.restore()
        _log.info("resuming run %r: %d finished trials restored", name, restored)
        _requeue_dead_local(storage, run_id, heartbeat_timeout)
    storage.put_state(run_id, "search", {"done": False})
    storage.set_run_status(run_id, "running")
    if not resumed and seeds:
        search.add_seeds(seeds)

    from ensemble.progress import Progress

    progress = Progress(enabled=not settings.quiet, technique=getattr(technique, "name", ""))
    log_fh = open(settings.results_log, "a", encoding="utf-8") if settings.results_log else None
    if log_fh is not None:
        search.listeners.append(lambda t: _log_trial(log_fh, t))
    try:
        _loop(app, app_ref, list(app_argv or []), storage, run_id, search, objective, settings,
              progress, heartbeat_timeout)
    finally:
        search.finish()
        storage.set_run_status(run_id, "finished" if search.done else "interrupted")
        progress.close(search.status)
        if log_fh is not None:
            log_fh.close()
    st = search.status
    best = search.best()
    best_value = None
    if best is not None:
        best_value = _user_value(objective, storage, run_id, best.config_hash, best.value)
    result = TuneResult(
        best_config=best.config if best else None, best_value=best_value, evaluations=st.unique,
        run_name=name, database=settings.database, trials=st.trials, failures=st.failures,
        duplicates=st.duplicates, best_technique=best.technique if best else None,
        stop_reason=st.stop_reason,
    )
    if settings.report_dir:
        from ensemble.report import write_report

        write_report(storage, run_id, settings.report_dir, objective=objective)
        result.report_dir = settings.report_dir
    return result


def _requeue_dead_local(storage: Any, run_id: int, heartbeat_timeout: float) -> None:
    """On resume: hand back requests left RUNNING by dead workers.

    Requests whose worker was a process of this host that no longer exists are
    requeued at once (the usual case after kill -9); otherwise only those whose
    heartbeat is older than ``heartbeat_timeout`` (a live remote worker keeps its trial).
    """
    import os
    import socket

    running = [r for r in storage.trials(run_id) if str(r.state) == "RUNNING"]
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


def _user_value(objective: Any, storage: Any, run_id: int, config_hash: str, scalar: float) -> float:
    """The objective's user-facing value of the best trial (e.g. a positive throughput)."""
    try:
        from ensemble.result import Result

        row = storage.result_for_hash(run_id, config_hash)
        metrics = dict(row.metrics or {}) if row is not None else {}
        res = Result(time=metrics.get("time"), metrics=metrics)
        return float(objective.value(res))
    except Exception:  # noqa: BLE001 - fall back to the ranking scalar
        return scalar


def _log_trial(fh: Any, trial: Any) -> None:
    fh.write(json.dumps({
        "evaluation": trial.evaluation, "state": trial.state, "technique": trial.technique,
        "value": None if trial.value == float("inf") else trial.value, "duplicate": trial.duplicate,
        "config": trial.config,
    }, sort_keys=True) + "\n")
    fh.flush()


def _loop(app: Any, app_ref: str, app_argv: list[str], storage: Any, run_id: int,
          search: SearchDriver, objective: Any, settings: RunSettings, progress: Any,
          heartbeat_timeout: float) -> None:
    hb = max(0.5, heartbeat_timeout / 4)
    n = settings.parallelism
    if n == 1 and settings.worker_mode == "thread":
        worker = MeasurementDriver(storage, run_id, app, objective, worker=worker_name("local0"),
                                   heartbeat_interval=hb)
        search.poll_interval = 0.05  # own results are recorded directly; others' are read 20x/s
        idle = 0.001
        try:
            while True:
                # by default one trial at a time, so the technique sees every result
                # before it proposes again; --batch N groups fast trials (fewer transactions)
                fast = worker.last_elapsed < FAST_TRIAL_S
                batch = settings.batch if fast else 1
                search.queue_depth = batch
                # fast trials, no other worker seen: insert requests already claimed by our worker
                # (one commit instead of two); slow trials stay WAITING, so an attached worker
                # (ensemble-tuner worker) can still take one and widen the queue
                search.claim_for = worker.worker if fast and search.active_workers() == 1 else None
                search.step()
                worker.adopt(search.take_claimed())
                if search.done:
                    return
                if worker.work_one(batch=batch):
                    idle = 0.001
                    if worker.last is not None:
                        search.record_local(*worker.last, worker.worker)
                else:
                    search.collect()
                    time.sleep(idle)
                    idle = min(0.05, idle * 2)
                progress.update(search.status)
        finally:
            # requests claimed ahead are measured, not left RUNNING (at most batch - 1)
            search.claim_for = None
            worker.adopt(search.take_claimed())
            while worker.held:
                worker.work_one()
                if worker.last is not None:
                    search.record_local(*worker.last, worker.worker)
            worker.close()
    wake = threading.Event()
    stop = threading.Event()
    threads: list[threading.Thread] = []
    procs: list[Any] = []
    if settings.worker_mode == "thread":
        lock = threading.Lock() if getattr(app, "has_compile", False) else None
        for i in range(n):
            drv = MeasurementDriver(storage, run_id, app, objective, worker=worker_name(f"local{i}"),
                                    heartbeat_interval=hb, measure_lock=lock, on_finish=wake.set)
            th = threading.Thread(target=drv.serve, args=(stop,), name=f"ensemble-worker-{i}", daemon=True)
            th.start()
            threads.append(th)
    else:
        ctx = multiprocessing.get_context("spawn")
        for i in range(n):
            p = ctx.Process(target=serve_worker, args=(settings.database, run_id, app_ref, app_argv,
                                                       f"proc{i}", hb), daemon=True)
            p.start()
            procs.append(p)
    try:
        while True:
            search.step()
            if search.done:
                break
            wake.wait(0.01)
            wake.clear()
            progress.update(search.status)
            if procs and not any(p.is_alive() for p in procs):
                raise SettingsError("every worker process exited; see their error output above")
    finally:
        search.finish()
        stop.set()
        for th in threads:
            th.join()
        for p in procs:
            p.join(timeout=heartbeat_timeout)
            if p.is_alive():
                p.terminate()
        search.collect()


def serve_worker(database: str, run_id: int, app_ref: str, app_argv: list[str], worker_tag: str,
                 heartbeat_interval: float = 5.0) -> int:
    """Body of a measurement worker process (local process mode, ``ensemble-tuner worker``).

    The worker's name (host:pid:tag) is made here, in the process that measures.
    """
    from ensemble.app import load_app_class
    from ensemble.storage import Storage

    storage = Storage(database)
    app = build_app(load_app_class(app_ref), app_argv)
    drv = MeasurementDriver(storage, run_id, app, app.objective(), worker=worker_name(worker_tag),
                            heartbeat_interval=heartbeat_interval)
    return drv.serve()


def build_app(app_class: type, app_argv: list[str]) -> Any:
    """Instantiate an app with its own flags parsed from ``app_argv``."""
    import argparse

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
