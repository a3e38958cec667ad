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
import socket
import threading
import time
from typing import TYPE_CHECKING, Any

from ensemble.driver.channel import SameThreadChannel
from ensemble.driver.measure import MeasurementDriver, worker_name
from ensemble.result import TrialState
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
        try:
            search = session.start_search(workers=max(1, settings.parallelism), channel=channel,
                                          poll_interval=0.05 if same_thread else 0.0)
        except BaseException:
            session.end_search(finished=False)   # never leave the run marked "running"
            raise
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
    pool = _WorkerThreads(session, wake)
    for _ in range(session.settings.parallelism):
        pool.start()
    try:
        _search_until_done(search, progress, wake, pool)
    finally:
        search.finish()
        pool.stop()
        search.collect()


class _WorkerThreads:
    """Worker threads, and the watchdog that lets the run go on past a trial that ignores ``--trial-limit``.

    Why abandon rather than kill: Python cannot kill a thread.  A thread whose
    trial runs ``_kill_grace`` past its limit is *abandoned*: its request is
    recorded TIMEOUT under its worker name (a result it commits later is
    refused), its own stop flag is set so it ends when ``run()`` returns, and a
    new thread takes its slot.  They are daemon threads, so an abandoned one
    does not keep the program alive at the end.  (The run says at start that
    threads cannot interrupt Python code: ``preflight.thread_limit_notice``.)
    """

    def __init__(self, session: RunSession, wake: threading.Event) -> None:
        self.session = session
        self.wake = wake
        self.lock = threading.Lock() if getattr(session.app, "has_compile", False) else None
        #: [thread, stop flag, [request id, start time, limit], worker name]
        self.entries: list[list[Any]] = []
        self.abandoned: list[threading.Thread] = []
        self._made = 0

    def start(self, index: int | None = None) -> None:
        s = self.session
        assert s.storage is not None
        slot: list[float] = [0.0, 0.0, 0.0]

        def on_begin(request_id: int, limit: float | None) -> None:
            slot[1] = time.time()
            slot[2] = float(limit or 0.0)
            slot[0] = float(request_id)

        stop = threading.Event()
        worker = worker_name(f"local{self._made}")
        drv = MeasurementDriver(s.storage, s.run_id, s.app, s.objective, worker=worker,
                                heartbeat_interval=_heartbeat_interval(s), measure_lock=self.lock,
                                on_finish=self.wake.set, on_begin=on_begin)
        th = threading.Thread(target=drv.serve, args=(stop,), name=f"ensemble-worker-{self._made}", daemon=True)
        self._made += 1
        th.start()
        entry = [th, stop, slot, worker, drv]
        if index is None:
            self.entries.append(entry)
        else:
            self.entries[index] = entry

    def watch(self) -> None:
        now = time.time()
        for i, (th, stop, slot, worker, drv) in enumerate(self.entries):
            rid, since, limit = slot
            if rid <= 0 or limit <= 0 or now - since <= limit + _kill_grace(limit):
                continue
            storage = self.session.storage
            assert storage is not None
            reason = (f"trial ran {now - since:.3g} s, over its limit of {limit:g} s (--trial-limit); Python code "
                      "in a thread cannot be stopped: the thread was abandoned and replaced (use --worker-mode "
                      "process to kill such trials)")
            stop.set()
            drv.close()                                   # no more heartbeats for the abandoned request
            storage.finish(int(rid), worker, state=TrialState.TIMEOUT, value=None, metrics={}, times=[],
                           cost=now - since, reason=reason)
            _log.warning("request %d: %s", int(rid), reason)
            self.abandoned.append(th)
            self.start(i)

    def alive(self) -> bool:
        return True

    def stop(self) -> None:
        for entry in self.entries:
            entry[1].set()
        for entry in self.entries:
            entry[0].join()


class _WorkerProcesses:
    """The worker processes of ``--worker-mode process`` and the watchdog that enforces ``--trial-limit``.

    Why a watchdog in the parent: Python code cannot be interrupted from
    inside (a ``time.sleep(1000)`` ignores every limit), but its process can
    be killed.  Each worker tells the parent, through a small shared array,
    which request it measures since when and under which limit; a trial still
    running ``grace`` seconds past its limit gets its process killed, is
    recorded TIMEOUT under that worker's name (so a result it might still
    commit is refused), and a new process takes the slot.
    """

    def __init__(self, session: RunSession) -> None:
        self.session = session
        self.ctx = multiprocessing.get_context("spawn")
        self.procs: list[Any] = []
        self.slots: list[Any] = []
        self.tags: list[str] = []
        self.replaced = 0

    def start(self, i: int, tag: str) -> None:
        s = self.session
        slot = self.ctx.Array("d", 3)
        p = self.ctx.Process(target=serve_worker, args=(s.settings.database, s.run_id, s.app_ref, s.app_argv, tag,
                                                        _heartbeat_interval(s), slot), daemon=True)
        p.start()
        if i < len(self.procs):
            self.procs[i], self.slots[i], self.tags[i] = p, slot, tag
        else:
            self.procs.append(p)
            self.slots.append(slot)
            self.tags.append(tag)

    def watch(self) -> None:
        """Kill and replace a worker whose trial ran past its limit plus the grace; record it TIMEOUT."""
        now = time.time()
        for i, slot in enumerate(self.slots):
            rid, since, limit = slot[:]
            if rid <= 0 or limit <= 0 or now - since <= limit + _kill_grace(limit):
                continue
            p = self.procs[i]
            p.kill()
            p.join(5.0)
            storage = self.session.storage
            assert storage is not None
            reason = (f"trial ran {now - since:.3g} s, over its limit of {limit:g} s (--trial-limit); "
                      "the worker process was killed and replaced")
            storage.finish(int(rid), f"{socket.gethostname()}:{p.pid}:{self.tags[i]}", state=TrialState.TIMEOUT,
                           value=None, metrics={}, times=[], cost=now - since, reason=reason)
            _log.warning("request %d: %s", int(rid), reason)
            self.replaced += 1
            self.start(i, f"{self.tags[i].split('.')[0]}.{self.replaced}")

    def alive(self) -> bool:
        return any(p.is_alive() for p in self.procs)

    def stop(self, timeout: float) -> None:
        for p in self.procs:
            p.join(timeout=timeout)
            if p.is_alive():
                p.terminate()


def _kill_grace(limit: float) -> float:
    """Seconds past the limit before a worker process is killed (the trial may be committing)."""
    return 1.0 + 0.1 * limit


def processes_loop(session: RunSession, search: SearchDriver, progress: Any) -> None:
    """``--worker-mode process``: each worker process rebuilds the app from its reference."""
    settings = session.settings
    pool = _WorkerProcesses(session)
    for i in range(settings.parallelism):
        pool.start(i, f"proc{i}")
    try:
        _search_until_done(search, progress, None, pool)
    finally:
        search.finish()
        pool.stop(settings.heartbeat_timeout)
        search.collect()


def _search_until_done(search: SearchDriver, progress: Any, wake: threading.Event | None,
                       pool: _WorkerProcesses | _WorkerThreads | None = None) -> None:
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
        if pool is not None:
            pool.watch()
            if not pool.alive():
                raise SettingsError("every worker process exited; see their error output above")


def serve_worker(database: str, run_id: int, app_ref: str, app_argv: list[str], worker_tag: str,
                 heartbeat_interval: float = 5.0, slot: Any = None) -> int:
    """Body of a measurement worker process (local process mode, ``ensemble-tuner worker``).

    The worker's name (host:pid:tag) is made here, in the process that measures.
    ``slot``: a shared array [request id, start time, limit] the parent's
    watchdog reads (``_WorkerProcesses``); None elsewhere.
    """
    from ensemble.driver.apps import build_app, load_app_class
    from ensemble.storage import open_storage

    storage = open_storage(database)
    app = build_app(load_app_class(app_ref), app_argv)
    on_begin = None
    if slot is not None:
        def on_begin(request_id: int, limit: float | None) -> None:
            slot[1] = time.time()
            slot[2] = float(limit or 0.0)
            slot[0] = float(request_id)
    drv = MeasurementDriver(storage, run_id, app, app.objective(), worker=worker_name(worker_tag),
                            heartbeat_interval=heartbeat_interval, on_begin=on_begin)
    return drv.serve()
