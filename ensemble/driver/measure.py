"""The measurement driver: claim a request, measure it, commit the result.

Why it shares nothing with the search driver but the database: the same loop
serves a thread next to the search, a worker process, ``ensemble-tuner worker``
on another host and an MPI rank. A request is claimed atomically, kept alive by
heartbeats while it runs, and its result is committed as soon as it finishes,
so a killed worker loses at most the trial in flight.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ensemble.driver.channel import LocalResult
from ensemble.driver.outcome import coerce_result, failure_from_exception
from ensemble.driver.records import row_config
from ensemble.result import Result, TrialState

if TYPE_CHECKING:  # pragma: no cover
    from ensemble.driver.channel import SameThreadChannel
    from ensemble.storage.base import BaseStorage

__all__ = ["MeasurementDriver", "worker_name"]

_log = logging.getLogger("ensemble.driver")


def worker_name(tag: str = "w") -> str:
    """host:pid:tag, unique per worker, readable in the requests table."""
    return f"{socket.gethostname()}:{os.getpid()}:{tag}"


class _Heartbeat:
    """One daemon thread per driver; beats only while a trial runs long."""

    def __init__(self, storage: BaseStorage, worker: str, interval: float) -> None:
        self.storage = storage
        self.worker = worker
        self.interval = interval
        self.current: int | None = None
        self.held: list[int] = []
        self._since = 0.0
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def begin(self, request_id: int) -> None:
        self._since = time.monotonic()
        self.current = request_id
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name=f"heartbeat-{self.worker}", daemon=True)
            self._thread.start()

    def end(self) -> None:
        self.current = None

    def _loop(self) -> None:
        while not self._stop.wait(self.interval / 2):
            rid = self.current
            if rid is not None and time.monotonic() - self._since >= self.interval / 2:
                try:
                    self.storage.heartbeat([rid, *self.held], self.worker)
                except Exception:  # noqa: BLE001 - a missed beat is retried next time
                    _log.debug("heartbeat for request %s failed", rid, exc_info=True)

    def close(self) -> None:
        self._stop.set()


class MeasurementDriver:
    """Measures requests of one run with one app; call :meth:`work_one` or :meth:`serve`.

    ``channel``: in the same-thread loop, the search driver inserts requests
    already claimed for this worker and hands them over through the channel,
    and this driver hands each committed result back the same way
    (``ensemble.driver.channel``); every other worker claims from the store.
    """

    def __init__(
        self,
        storage: BaseStorage,
        run_id: int,
        app: Any,
        objective: Any,
        *,
        worker: str | None = None,
        heartbeat_interval: float = 5.0,
        measure_lock: threading.Lock | None = None,
        on_finish: Callable[[], None] | None = None,
        channel: SameThreadChannel | None = None,
        on_begin: Callable[[int, float | None], None] | None = None,
    ) -> None:
        self.storage = storage
        self.run_id = run_id
        self.app = app
        self.objective = objective
        self.worker = channel.worker if channel is not None else (worker or worker_name())
        self.channel = channel
        self.measured = 0
        self._held: list[Any] = []
        #: seconds the last measurement took (0 before the first)
        self.last_elapsed = 0.0
        self._measure_lock = measure_lock
        self._on_finish = on_finish
        #: told (request_id, limit_s) when a measurement starts and (0, None) when it ends: the
        #: parent of a worker process watches this to kill a trial that ignores its limit
        self._on_begin = on_begin
        self._heartbeat = _Heartbeat(storage, self.worker, heartbeat_interval)

    def work_one(self, batch: int = 1) -> bool:
        """Measure one request (claiming up to ``batch`` at once); False when none was WAITING.

        Requests claimed ahead stay RUNNING for this worker and are kept alive
        by its heartbeat until measured.
        """
        if self.channel is not None and len(self.channel):
            # requests the search inserted already claimed for this worker: no claim transaction
            self._held.extend(self.channel.take_claims())
            self._heartbeat.held = [c.request_id for c in self._held]
        if not self._held:
            self._held.extend(self.storage.claim(self.run_id, self.worker, batch))
            self._heartbeat.held = [c.request_id for c in self._held]
        if not self._held:
            return False
        claim = self._held.pop(0)
        self._heartbeat.held = [c.request_id for c in self._held]
        self._heartbeat.begin(claim.request_id)
        config = self.channel.take_config(claim.request_id) if self.channel is not None else None
        if self._on_begin is not None:
            self._on_begin(claim.request_id, claim.limit_s)
        try:
            result, elapsed = self._measure(config if config is not None else row_config(claim), claim.limit_s)
        finally:
            self._heartbeat.end()
            if self._on_begin is not None:
                self._on_begin(0, None)
        self.last_elapsed = elapsed
        self.record(claim.request_id, result, elapsed)
        return True

    @property
    def held(self) -> int:
        """Requests claimed ahead (or handed over by the channel) and not measured yet."""
        return len(self._held) + (len(self.channel) if self.channel is not None else 0)

    def _measure(self, config: dict[str, Any], limit: float | None) -> tuple[Result, float]:
        app = self.app
        t0 = time.perf_counter()
        try:
            if getattr(app, "has_compile", False):
                artifact = app.compile(config)
                if self._measure_lock is not None:
                    with self._measure_lock:
                        t0 = time.perf_counter()
                        raw = app.run_compiled(config, artifact, limit)
                else:
                    raw = app.run_compiled(config, artifact, limit)
            else:
                raw = app.run(config, limit)
            result = coerce_result(raw)
        except Exception as exc:  # noqa: BLE001 - the run goes on; the reason is recorded
            result = failure_from_exception(exc)
        except SystemExit as exc:  # sys.exit() in run() (often a copied script): one failed trial, said so
            result = failure_from_exception(exc, hint="run() called sys.exit(); return a Result instead")
        elapsed = time.perf_counter() - t0
        if limit is not None and elapsed > limit and result.state == TrialState.OK:
            result = Result(state=TrialState.TIMEOUT, reason=f"trial took {elapsed:.3g} s, limit {limit:g} s",
                            metrics=dict(result.metrics or {}), times=list(result.times or []))
        return result, elapsed

    def record(self, request_id: int, result: Result, elapsed: float | None) -> bool:
        """Commit the result of a request RUNNING for this worker; False if it was taken away.

        Public for callers that measure themselves (the ask/tell ``Tuner``):
        the result is ranked by the objective exactly as a measured one.
        ``elapsed`` is the cost charged when the result carries none; None
        leaves the cost unknown (ask/tell: the measurement happened elsewhere),
        and techniques that weigh their compute against the evaluations' cost
        then never give up for that reason.
        """
        state = str(getattr(result.state, "value", result.state))
        metrics = dict(result.metrics or {})
        if result.time is not None:
            metrics.setdefault("time", float(result.time))
        value: float | None
        if state == TrialState.OK:
            try:
                value = float(self.objective.scalar(result))
            except Exception as exc:  # noqa: BLE001 - e.g. the objective's metric is missing
                state, value = TrialState.FAILED, None
                result = Result(state=TrialState.FAILED, reason=f"ObjectiveError: {exc}", metrics=metrics)
                _log.warning("objective could not rank a result: %s", exc)
        else:
            value = None
        cost = result.cost if result.cost is not None else elapsed
        ok = self.storage.finish(
            request_id, self.worker, state=state, value=value, metrics=metrics,
            times=list(result.times or []), cost=cost, reason=result.reason,
        )
        if not ok:
            _log.warning("request %d was taken from worker %s (stale heartbeat); result dropped",
                         request_id, self.worker)
        else:
            self.measured += 1
            if self.channel is not None:
                self.channel.put_result(LocalResult(request_id, state, value, cost, self.worker, metrics or None))
        if self._on_finish is not None:
            self._on_finish()
        return ok

    def close(self) -> None:
        """Stop the heartbeat thread (serve() does this itself)."""
        self._heartbeat.close()

    def search_done(self) -> bool:
        state = self.storage.get_state(self.run_id, "search")
        return bool(state and state.get("done"))

    def serve(self, stop: threading.Event | None = None, *, idle_poll: float = 0.002,
              max_idle_poll: float = 0.1) -> int:
        """Measure until the search is over (or ``stop`` is set); returns trials measured."""
        pause = idle_poll
        try:
            while stop is None or not stop.is_set():
                if self.work_one():
                    pause = idle_poll
                    continue
                if self.search_done():
                    break
                if stop is not None:
                    stop.wait(pause)
                else:
                    time.sleep(pause)
                pause = min(max_idle_poll, pause * 2)
        finally:
            self._heartbeat.close()
        return self.measured
