"""The in-memory store: the BaseStorage contract in plain dicts, for throw-away runs, replays and tests.

Why: a tuning run whose results nobody keeps (a replay of recorded
measurements, a technique test, ``--database memory://``) should not pay a
commit per trial.  This store keeps the SQL store's semantics and records
exactly (the same conformance suite runs on both) and is fast enough to
carry the search driver's hot path: an ``add_and_claim`` plus ``finish``
pair costs a few microseconds (``python -m scripts.bench_storage``).

How it stays fast and correct:

* One ``threading.RLock`` guards every method, so a method is atomic for the
  threads sharing the object (the SQL store's transactions, in one process).
* Nothing is parsed on the hot path: configuration, metrics and times JSON
  is kept as the canonical text of :mod:`ensemble.storage.jsonenc` (encoded
  once in ``finish``; an empty dict or list, or a list of finite floats,
  takes a shortcut whose output is the same text) and decoded only when a
  record is handed out.
* Per-run indexes replace the SQL indexes: hash -> configuration, the
  WAITING queue in id order (an ``OrderedDict``), RUNNING requests for
  ``requeue_stale``, each configuration's measured requests and its earliest
  measured result (duplicates and ``submit``), and a sorted list of finished
  request ids that ``finished_since`` bisects.
* Ids increase from 1 and are never reused; timestamps are naive UTC
  ``datetime``; heartbeat ages use ``time.monotonic``, the store's clock.

The data lives as long as the object: another process cannot see it
(``shareable_across_processes`` is False).  Named stores shared within one
process are opened through :func:`ensemble.storage.open_storage`.
"""

from __future__ import annotations

import bisect
import datetime as _dt
import json
import time
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import replace
from threading import RLock
from typing import Any, Self

from ensemble.errors import RunExistsError, StorageError
from ensemble.result import TrialState
from ensemble.storage import jsonenc
from ensemble.storage.base import BaseStorage
from ensemble.storage.checks import check_worker, finished_state, number
from ensemble.storage.records import (
    Claim,
    FinishedTrial,
    NewRequest,
    RunRecord,
    Submitted,
    TrialRow,
)

__all__ = ["MemoryStorage"]

_WAITING, _RUNNING = TrialState.WAITING, TrialState.RUNNING
_UTC = _dt.UTC
_UTC_EPOCH = _dt.datetime(1970, 1, 1, tzinfo=_UTC)
_NAIVE_EPOCH = _dt.datetime(1970, 1, 1)


def _utcnow() -> _dt.datetime:
    """Naive UTC now; ``now(UTC).replace(tzinfo=None)`` costs three times as much (keyword parsing)."""
    return _NAIVE_EPOCH + (_dt.datetime.now(_UTC) - _UTC_EPOCH)


def _floats_json(xs: Sequence[Any]) -> str:
    """``jsonenc.dumps(list(xs))``, with a shortcut for finite Python floats (a test checks they agree)."""
    for x in xs:
        if type(x) is not float or x - x != 0.0:  # not a float, or inf/nan (x - x is nan)
            return jsonenc.dumps(list(xs), where="times")
    return "[" + ",".join(map(float.__repr__, xs)) + "]"


def _loads(text: str) -> Any:
    """``jsonenc.loads(text)``; text without a tagged float needs no object hook (json's shared decoder)."""
    return jsonenc.loads(text) if jsonenc.FLOAT_TAG in text else json.loads(text)


def _loads_dict(text: str) -> Any:
    return {} if text == "{}" else _loads(text)


def _loads_list(text: str) -> Any:
    return [] if text == "[]" else _loads(text)


class _Config:
    """A stored configuration, with what ``submit`` and duplicates ask of it."""

    __slots__ = ("first", "hash", "id", "json", "measured")

    def __init__(self, cid: int, config_hash: str, config_json: str) -> None:
        self.id, self.hash, self.json = cid, config_hash, config_json
        self.measured: list[_Request] = []     # its non-duplicate requests, in id order
        self.first: _Request | None = None     # the finished one of those with the lowest id


class _Request:
    """A request row and its result row in one object (a result exists once ``finished_at`` is set)."""

    __slots__ = ("claimed_at", "config", "cost", "created_at", "duplicate", "finished_at", "heartbeat", "id",
                 "limit_s", "metrics_json", "reason", "run_id", "state", "technique", "times_json", "value",
                 "worker")

    def __init__(self, rid: int, run_id: int, config: _Config, technique: str, limit_s: float | None,
                 duplicate: bool, created_at: _dt.datetime) -> None:
        self.id, self.run_id, self.config, self.technique = rid, run_id, config, technique
        self.limit_s, self.duplicate, self.created_at = limit_s, duplicate, created_at
        self.state: TrialState = _WAITING
        self.worker: str | None = None
        self.claimed_at: _dt.datetime | None = None
        self.heartbeat = 0.0                    # time.monotonic() of the last claim or heartbeat
        self.finished_at: _dt.datetime | None = None
        self.value: float | None = None
        self.cost: float | None = None
        self.reason: str | None = None
        self.metrics_json = "{}"
        self.times_json = "[]"

    def copy_result(self, source: _Request, now: _dt.datetime) -> None:
        """Finish as a duplicate of ``source``: its state and result, cost 0, never claimed."""
        self.state, self.value, self.reason = source.state, source.value, source.reason
        self.metrics_json, self.times_json = source.metrics_json, source.times_json
        self.cost, self.finished_at = 0.0, now

    def finished(self) -> FinishedTrial:
        cfg = self.config
        return FinishedTrial(
            self.id, cfg.id, cfg.hash, cfg.json, self.technique, self.state, self.value, self.duplicate,
            self.worker, self.cost, self.reason, self.finished_at,
            _loads_dict(self.metrics_json), _loads_list(self.times_json),
        )

    def row(self) -> TrialRow:
        cfg = self.config
        return TrialRow(
            self.id, cfg.id, cfg.hash, cfg.json, self.technique, self.state, self.duplicate, self.worker,
            self.limit_s, self.created_at, self.claimed_at, self.finished_at, self.value, self.cost,
            self.reason, _loads_dict(self.metrics_json), _loads_list(self.times_json),
        )


class _Run:
    """One run's record and indexes."""

    __slots__ = ("configs", "finished", "measured", "record", "requests", "running", "state", "waiting")

    def __init__(self, record: RunRecord) -> None:
        self.record = record
        self.configs: dict[str, _Config] = {}
        self.requests: dict[int, _Request] = {}          # every request, in id order
        self.waiting: OrderedDict[int, _Request] = OrderedDict()  # WAITING, in id order
        self.running: dict[int, _Request] = {}
        self.finished: list[int] = []                    # finished request ids, sorted
        self.measured = 0                                # non-duplicate requests in any state (budget)
        self.state: dict[str, str] = {}


class MemoryStorage(BaseStorage):
    """Results kept in this process's memory (see the module docstring); ``url`` is ``memory://[NAME]``."""

    def __init__(self, url: str = "memory://") -> None:
        self._url = url
        self._lock = RLock()
        self._runs: dict[int, _Run] = {}
        self._by_name: dict[str, int] = {}
        self._requests: dict[int, _Request] = {}
        self._next_run = self._next_config = self._next_request = 1

    # ------------------------------------------------------------ identity
    @property
    def url(self) -> str:
        """``memory://`` for a private store, ``memory://NAME`` for one shared by name in this process."""
        return self._url

    @property
    def shareable_across_processes(self) -> bool:
        """False: the data lives in this process; worker processes, MPI ranks and other hosts cannot see it."""
        return False

    def close(self) -> None:
        """Nothing to release: the data stays readable while the object is referenced."""

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"MemoryStorage({self._url!r})"

    def _run(self, run_id: int) -> _Run:
        run = self._runs.get(run_id)
        if run is None:
            raise StorageError(f"run_id={run_id!r} does not exist in {self._url}; use an id from create_run/get_run")
        return run

    # ---------------------------------------------------------------- runs
    def create_run(
        self,
        name: str,
        *,
        app: str,
        space_json: str | dict[str, Any],
        space_hash: str,
        objective_json: str | dict[str, Any] = "{}",
        settings_json: str | dict[str, Any] = "{}",
    ) -> int:
        """Create run ``name`` or return the id of the one with the same space (BaseStorage.create_run)."""
        if not isinstance(name, str) or not name.strip():
            raise StorageError(f"run name {name!r} must be a non-empty string; pass --run-name NAME")
        texts = {
            key: val if isinstance(val, str) else jsonenc.dumps(val, where=key)
            for key, val in (("space_json", space_json), ("objective_json", objective_json),
                             ("settings_json", settings_json))
        }
        with self._lock:
            run_id = self._by_name.get(name)
            if run_id is None:
                run_id, self._next_run = self._next_run, self._next_run + 1
                now = _utcnow()
                self._runs[run_id] = _Run(RunRecord(
                    id=run_id, name=name, app=app, space_hash=space_hash, status="created",
                    created_at=now, updated_at=now, **texts))
                self._by_name[name] = run_id
                return run_id
            existing = self._runs[run_id].record.space_hash
        if existing != space_hash:
            raise RunExistsError(
                f"run {name!r} already exists in {self._url} with a different search space "
                f"(space hash {existing[:12]}..., this one {space_hash[:12]}...); "
                "pass another --run-name, or use another --database"
            )
        return run_id

    def get_run(self, name: str) -> RunRecord | None:
        """The run called ``name``, or None."""
        with self._lock:
            run_id = self._by_name.get(name)
            return None if run_id is None else self._runs[run_id].record

    def list_runs(self) -> list[RunRecord]:
        """Every run, oldest first."""
        with self._lock:
            return [run.record for run in self._runs.values()]

    def set_run_status(self, run_id: int, status: str) -> None:
        """Record a run's status and touch ``updated_at``."""
        with self._lock:
            run = self._run(run_id)
            run.record = replace(run.record, status=status, updated_at=_utcnow())

    # ------------------------------------------------------------ requests
    def add_requests(
        self, run_id: int, items: Sequence[NewRequest], *, claim_for: str | None = None
    ) -> list[int]:
        """Insert requests atomically and return their ids (BaseStorage.add_requests)."""
        return self._insert(run_id, items, claim_for)[0]

    def add_and_claim(self, run_id: int, items: Sequence[NewRequest], worker: str) -> tuple[list[int], list[Claim]]:
        """``add_requests(run_id, items, claim_for=worker)`` plus the claims, in item order."""
        return self._insert(run_id, items, worker)

    def _configs(self, run: _Run, items: Sequence[NewRequest]) -> list[_Config]:
        """Each item's configuration, storing new ones; new ids follow sorted hash order as in the SQL store."""
        configs = run.configs
        new: dict[str, str] = {}
        for it in items:
            if it.config_hash not in configs:
                new.setdefault(it.config_hash, it.config_json)
        for h in sorted(new):
            configs[h] = _Config(self._next_config, h, new[h])
            self._next_config += 1
        return [configs[it.config_hash] for it in items]

    def _sources(self, run: _Run, items: Sequence[NewRequest], run_id: int) -> None:
        """Raise (before anything is written) if a duplicate item's configuration has no measured result."""
        for it in items:
            if it.duplicate:
                cfg = run.configs.get(it.config_hash)
                if cfg is None or cfg.first is None:
                    raise StorageError(
                        f"NewRequest(config_hash={it.config_hash!r}, duplicate=True) in run {run_id}: that "
                        "configuration has no finished result to copy; submit it with duplicate=False, or wait "
                        "for its result (result_for_hash) before marking repeats as duplicates"
                    )

    def _new_request(self, run: _Run, run_id: int, it: NewRequest, cfg: _Config, duplicate: bool,
                     claim_for: str | None, now: _dt.datetime, mono: float) -> _Request:
        """Store one request: finished as a duplicate, RUNNING for ``claim_for``, or WAITING."""
        rid = self._next_request
        self._next_request = rid + 1
        limit = None if it.limit_s is None else float(it.limit_s)
        req = _Request(rid, run_id, cfg, it.technique, limit, duplicate, now)
        self._requests[rid] = run.requests[rid] = req
        if duplicate:
            assert cfg.first is not None
            req.copy_result(cfg.first, now)
            bisect.insort(run.finished, rid)
            return req
        run.measured += 1
        cfg.measured.append(req)
        if claim_for is None:
            run.waiting[rid] = req
        else:
            req.state, req.worker, req.claimed_at, req.heartbeat = _RUNNING, claim_for, now, mono
            run.running[rid] = req
        return req

    def _insert(
        self, run_id: int, items: Sequence[NewRequest], claim_for: str | None
    ) -> tuple[list[int], list[Claim]]:
        if claim_for is not None:
            check_worker(claim_for)
        if not items:
            return [], []
        if len(items) == 1 and not items[0].duplicate:  # the search driver's hot path, inlined
            it = items[0]
            with self._lock:
                run = self._runs.get(run_id) or self._run(run_id)
                cfg = run.configs.get(it.config_hash)
                if cfg is None:
                    cfg = run.configs[it.config_hash] = _Config(self._next_config, it.config_hash, it.config_json)
                    self._next_config += 1
                req = self._new_request(run, run_id, it, cfg, False, claim_for, _utcnow(), time.monotonic())
            rid = req.id
            return [rid], ([] if claim_for is None else [Claim(rid, cfg.id, it.config_json, it.limit_s)])
        ids: list[int] = []
        claims: list[Claim] = []
        with self._lock:
            run = self._run(run_id)
            self._sources(run, items, run_id)
            configs = self._configs(run, items)
            now, mono = _utcnow(), time.monotonic()
            for it, cfg in zip(items, configs):
                req = self._new_request(run, run_id, it, cfg, it.duplicate, claim_for, now, mono)
                ids.append(req.id)
                if claim_for is not None and not it.duplicate:
                    claims.append(Claim(req.id, cfg.id, it.config_json, it.limit_s))
        return ids, claims

    def submit(
        self, run_id: int, items: Sequence[NewRequest], *, claim_for: str | None = None,
        budget: int | None = None,
    ) -> Submitted:
        """Insert requests so that each configuration is measured at most once in the run (BaseStorage.submit)."""
        if claim_for is not None:
            check_worker(claim_for)
        if not items:
            return Submitted([], [], {}, [], None)
        status = ["duplicate" if it.duplicate else "new" for it in items]
        wait_for: dict[int, int] = {}
        used: int | None = None
        ids: list[int | None] = [None] * len(items)
        claims: list[Claim] = []
        with self._lock:
            run = self._run(run_id)
            self._sources(run, items, run_id)
            configs = self._configs(run, items)
            left = None
            if budget is not None:
                used = run.measured
                left = budget - used
            first_new: dict[str, int] = {}       # hash -> index of the item that measures it in this batch
            over: set[str] = set()
            for i, (it, cfg) in enumerate(zip(items, configs)):
                if status[i] != "new":
                    continue
                in_flight = next((r.id for r in cfg.measured if r.finished_at is None), None)
                if cfg.first is not None:
                    status[i] = "duplicate"
                elif in_flight is not None:
                    status[i] = "pending"
                    wait_for[i] = in_flight
                elif it.config_hash in first_new:
                    status[i] = "pending"        # its id is filled in below
                elif it.config_hash in over or (left is not None and left <= 0):
                    status[i] = "over_budget"
                    over.add(it.config_hash)
                else:
                    first_new[it.config_hash] = i
                    if left is not None:
                        left -= 1
            # decided on the state before this call (as the SQL store's one transaction does): insert now
            now, mono = _utcnow(), time.monotonic()
            for i, (it, cfg) in enumerate(zip(items, configs)):
                if status[i] in ("new", "duplicate"):
                    req = self._new_request(run, run_id, it, cfg, status[i] == "duplicate", claim_for, now, mono)
                    ids[i] = req.id
                    if claim_for is not None and status[i] == "new":
                        claims.append(Claim(req.id, cfg.id, it.config_json, it.limit_s))
            if used is not None:
                used += len(first_new)
        for i, st in enumerate(status):
            if st == "pending" and i not in wait_for:
                wait_for[i] = ids[first_new[items[i].config_hash]]  # type: ignore[assignment]
        return Submitted(ids, status, wait_for, claims, used)

    def claim(self, run_id: int, worker: str, n: int = 1) -> list[Claim]:
        """Atomically move up to ``n`` WAITING requests (oldest first) to RUNNING for ``worker``."""
        check_worker(worker)
        if n < 1:
            return []
        out: list[Claim] = []
        with self._lock:
            run = self._runs.get(run_id)
            if run is None or not run.waiting:
                return out
            now, mono = _utcnow(), time.monotonic()
            waiting, running = run.waiting, run.running
            while waiting and len(out) < n:
                rid, req = waiting.popitem(last=False)
                req.state, req.worker, req.claimed_at, req.heartbeat = _RUNNING, worker, now, mono
                running[rid] = req
                out.append(Claim(rid, req.config.id, req.config.json, req.limit_s))
        return out

    def heartbeat(self, request_ids: Sequence[int], worker: str) -> int:
        """Touch the heartbeat of requests still RUNNING by ``worker``; return how many were."""
        touched = 0
        with self._lock:
            mono = time.monotonic()
            for rid in request_ids:
                req = self._requests.get(rid)
                if req is not None and req.state is _RUNNING and req.worker == worker:
                    req.heartbeat = mono
                    touched += 1
        return touched

    def finish(
        self,
        request_id: int,
        worker: str,
        *,
        state: TrialState | str,
        value: float | None = None,
        metrics: dict[str, Any] | None = None,
        times: Sequence[float] | None = None,
        cost: float | None = None,
        reason: str | None = None,
    ) -> bool:
        """Store the result of a request RUNNING by ``worker``; False (nothing written) otherwise."""
        st = finished_state(state)
        value_f, cost_f = number(value, "value"), number(cost, "cost")
        metrics_json = jsonenc.dumps(metrics, where="metrics") if metrics else "{}"
        times_json = _floats_json(times) if times else "[]"
        with self._lock:
            req = self._requests.get(request_id)
            if req is None or req.state is not _RUNNING or req.worker != worker:
                return False
            run = self._runs[req.run_id]
            req.state, req.finished_at = st, _utcnow()
            req.value, req.cost, req.reason = value_f, cost_f, reason
            req.metrics_json, req.times_json = metrics_json, times_json
            del run.running[request_id]
            finished = run.finished
            if not finished or finished[-1] < request_id:
                finished.append(request_id)
            else:
                bisect.insort(finished, request_id)
            cfg = req.config
            if cfg.first is None or cfg.first.id > request_id:
                cfg.first = req
        return True

    def requeue_stale(self, run_id: int, older_than_s: float) -> int:
        """Return RUNNING requests whose heartbeat is older than ``older_than_s`` (monotonic clock) to WAITING."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                return 0
            cutoff = time.monotonic() - older_than_s
            stale = [req for req in run.running.values() if req.heartbeat <= cutoff]
            if not stale:
                return 0
            for req in stale:
                del run.running[req.id]
                req.state, req.worker, req.claimed_at = _WAITING, None, None
            queue = sorted([*run.waiting.values(), *stale], key=lambda r: r.id)
            run.waiting = OrderedDict((r.id, r) for r in queue)
            return len(stale)

    def withdraw_waiting(self, run_id: int, request_ids: Sequence[int]) -> list[int]:
        """Delete those of ``request_ids`` that are still WAITING; return the ids deleted, ascending."""
        withdrawn: list[int] = []
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                return withdrawn
            for rid in sorted(set(request_ids)):
                req = run.waiting.pop(rid, None)
                if req is None:
                    continue
                del run.requests[rid], self._requests[rid]
                req.config.measured.remove(req)
                run.measured -= 1
                withdrawn.append(rid)
        return withdrawn

    # ------------------------------------------------------------- reading
    def finished_since(self, run_id: int, after_request_id: int) -> list[FinishedTrial]:
        """Finished requests with id > ``after_request_id``, in request-id order."""
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                return []
            finished = run.finished
            start = bisect.bisect_right(finished, after_request_id)
            done = [run.requests[rid] for rid in finished[start:]]
        return [req.finished() for req in done]  # finished requests never change: built outside the lock

    def result_for_hash(self, run_id: int, config_hash: str) -> FinishedTrial | None:
        """The earliest measured (non-duplicate) result for a configuration of this run, or None."""
        with self._lock:
            run = self._runs.get(run_id)
            cfg = None if run is None else run.configs.get(config_hash)
            first = None if cfg is None else cfg.first
        return None if first is None else first.finished()

    def counts(self, run_id: int) -> dict[str, int]:
        """Requests per state (every state present) plus ``requests``, ``duplicates``, ``measured``, ``unique``."""
        out = {s.value: 0 for s in TrialState}
        out.update(requests=0, duplicates=0, measured=0, unique=0)
        with self._lock:
            run = self._runs.get(run_id)
            if run is None:
                return out
            unique: set[int] = set()
            for req in run.requests.values():
                out[req.state.value] += 1
                if req.duplicate:
                    out["duplicates"] += 1
                elif req.finished_at is not None:
                    out["measured"] += 1
                    unique.add(req.config.id)
            out["requests"] = len(run.requests)
            out["unique"] = len(unique)
        return out

    def trials(self, run_id: int) -> list[TrialRow]:
        """Every request of the run with its result (if any), in request-id order."""
        with self._lock:
            run = self._runs.get(run_id)
            return [] if run is None else [req.row() for req in run.requests.values()]

    # ----------------------------------------------------------- run state
    def put_state(self, run_id: int, key: str, obj: Any) -> None:
        """Store a JSON-able object under ``key`` for the run (kept as its canonical JSON text)."""
        data = jsonenc.dumps(obj, where=f"state {key!r}")
        with self._lock:
            self._run(run_id).state[key] = data

    def get_state(self, run_id: int, key: str, default: Any = None) -> Any:
        """A fresh decoded copy of the object stored under ``key`` for the run, or ``default``."""
        with self._lock:
            run = self._runs.get(run_id)
            data = None if run is None else run.state.get(key)
        return default if data is None else jsonenc.loads(data)

    # ------------------------------------------------------------ test hook
    def _age_heartbeat(self, request_id: int, seconds: float) -> None:
        """Tests only: make a request's heartbeat ``seconds`` older, as a silent worker's would be.

        The store's clock is ``time.monotonic`` and cannot be set, so the
        conformance suite plants a stale request through this hook (the SQL
        suites rewrite ``heartbeat_at`` instead).
        """
        with self._lock:
            self._requests[request_id].heartbeat -= seconds
