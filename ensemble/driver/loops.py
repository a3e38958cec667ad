"""Local loops: how configurations move between one search driver and the workers of this host.

Why several: the cheapest correct way differs with the work.  One worker in
the search's thread (:func:`same_thread_loop`) costs no thread switch and,
through the :class:`~ensemble.driver.channel.SameThreadChannel`, no read-back
of its own results; threads (:func:`threads_loop`) suit subprocess and GPU
objectives, which release the GIL; processes (:func:`processes_loop`) suit
CPU-bound Python objectives.  Each loop only moves work: the run's set-up,
end and summary belong to the :class:`~ensemble.driver.session.RunSession`.
"""

from __future__ import annotations

import logging
import multiprocessing
import threading
import time
from typing import TYPE_CHECKING, Any

from ensemble.driver.channel import SameThreadChannel
from ensemble.driver.measure import MeasurementDriver, worker_name
from ensemble.settings import SettingsError

if TYPE_CHECKING:  # pragma: no cover
    from ensemble.driver.runinfo import TuneResult
    from ensemble.driver.search import SearchDriver
    from ensemble.driver.session import RunSession

__all__ = ["FAST_TRIAL_S", "processes_loop", "run_local", "same_thread_loop", "serve_worker", "threads_loop"]

_log = logging.getLogger("ensemble.driver")

#: with RunSettings.batch > 1, only trials shorter than this (seconds) are batched
FAST_TRIAL_S = 0.05


def run_local(session: RunSession) -> TuneResult:
    """Prepare, open, search with the loop the settings call for, end, summarise, report."""
    from ensemble.progress import Progress

    settings = session.settings
    session.prepare()
    session.check_processes()
    try:
        session.open()
        same_thread = settings.parallelism == 1 and settings.worker_mode == "thread"
        channel = SameThreadChannel(worker_name("local0")) if same_thread else None
        search = session.start_search(workers=max(1, settings.parallelism), channel=channel,
                                      poll_interval=0.05 if same_thread else 0.0)
        progress = Progress(enabled=not settings.quiet, technique=getattr(search.technique, "name", ""))
        try:
            if channel is not None:
                same_thread_loop(session, search, channel, progress)
            elif settings.worker_mode == "thread":
                threads_loop(session, search, progress)
            else:
                processes_loop(session, search, progress)
        finally:
            session.end_search()
            progress.close(search.status)
        result = session.summary()
        session.write_report(result)
        return result
    finally:
        session.close()


def _heartbeat_interval(session: RunSession) -> float:
    return max(0.5, session.settings.heartbeat_timeout / 4)


def same_thread_loop(session: RunSession, search: SearchDriver, channel: SameThreadChannel, progress: Any) -> None:
    """One worker in the search's thread: one trial at a time, or ``--batch N`` fast ones."""
    assert session.storage is not None
    worker = MeasurementDriver(session.storage, session.run_id, session.app, session.objective,
                               channel=channel, heartbeat_interval=_heartbeat_interval(session))
    batch_size = session.settings.batch
    idle = 0.001
    try:
        while True:
            # by default one trial at a time, so the technique sees every result before it
            # proposes again; --batch N groups fast trials (fewer transactions)
            fast = worker.last_elapsed < FAST_TRIAL_S
            channel.queue_depth = batch_size if fast else 1
            # fast trials, no other worker seen: insert requests already claimed by our worker
            # (one commit instead of two); slow trials stay WAITING, so an attached worker
            # (ensemble-tuner worker) can still take one and widen the queue
            channel.claim_new = fast and search.active_workers() == 1
            search.step()
            if search.done:
                return
            if worker.work_one(batch=channel.queue_depth):
                idle = 0.001
            else:
                search.collect()
                time.sleep(idle)
                idle = min(0.05, idle * 2)
            progress.update(search.status)
    finally:
        # requests claimed ahead are measured, not left RUNNING (at most batch - 1)
        channel.claim_new = False
        while worker.held:
            worker.work_one()
        search.collect()
        worker.close()


def threads_loop(session: RunSession, search: SearchDriver, progress: Any) -> None:
    """``--parallelism N`` worker threads (subprocess and GPU objectives release the GIL)."""
    assert session.storage is not None
    wake = threading.Event()
    stop = threading.Event()
    app = session.app
    lock = threading.Lock() if getattr(app, "has_compile", False) else None
    threads = []
    for i in range(session.settings.parallelism):
        drv = MeasurementDriver(session.storage, session.run_id, app, session.objective,
                                worker=worker_name(f"local{i}"), heartbeat_interval=_heartbeat_interval(session),
                                measure_lock=lock, on_finish=wake.set)
        th = threading.Thread(target=drv.serve, args=(stop,), name=f"ensemble-worker-{i}", daemon=True)
        th.start()
        threads.append(th)
    try:
        _search_until_done(search, progress, wake)
    finally:
        search.finish()
        stop.set()
        for th in threads:
            th.join()
        search.collect()


def processes_loop(session: RunSession, search: SearchDriver, progress: Any) -> None:
    """``--worker-mode process``: each worker process rebuilds the app from its reference."""
    settings = session.settings
    ctx = multiprocessing.get_context("spawn")
    procs = []
    for i in range(settings.parallelism):
        p = ctx.Process(target=serve_worker, args=(settings.database, session.run_id, session.app_ref,
                                                   session.app_argv, f"proc{i}", _heartbeat_interval(session)),
                        daemon=True)
        p.start()
        procs.append(p)
    try:
        _search_until_done(search, progress, None, procs)
    finally:
        search.finish()
        for p in procs:
            p.join(timeout=settings.heartbeat_timeout)
            if p.is_alive():
                p.terminate()
        search.collect()


def _search_until_done(search: SearchDriver, progress: Any, wake: threading.Event | None,
                       procs: list[Any] | None = None) -> None:
    while True:
        search.step()
        if search.done:
            return
        if wake is not None:
            wake.wait(0.01)
            wake.clear()
        else:
            time.sleep(0.01)
        progress.update(search.status)
        if procs and not any(p.is_alive() for p in procs):
            raise SettingsError("every worker process exited; see their error output above")


def serve_worker(database: str, run_id: int, app_ref: str, app_argv: list[str], worker_tag: str,
                 heartbeat_interval: float = 5.0) -> int:
    """Body of a measurement worker process (local process mode, ``ensemble-tuner worker``).

    The worker's name (host:pid:tag) is made here, in the process that measures.
    """
    from ensemble.driver.apps import build_app, load_app_class
    from ensemble.storage import open_storage

    storage = open_storage(database)
    app = build_app(load_app_class(app_ref), app_argv)
    drv = MeasurementDriver(storage, run_id, app, app.objective(), worker=worker_name(worker_tag),
                            heartbeat_interval=heartbeat_interval)
    return drv.serve()
