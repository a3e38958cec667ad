"""The SQL store (SQLite, PostgreSQL): the BaseStorage contract on SQLAlchemy Core.

Each public method is one short transaction through ``Database.begin`` and a
few SQLAlchemy Core statements, so it commits before returning (a killed
process loses only what it had not yet handed to Storage) and costs well
under a millisecond on SQLite (``python -m scripts.bench_storage``).

Request lifecycle: ``add_requests`` -> WAITING -> ``claim`` -> RUNNING ->
``finish`` -> OK | FAILED | TIMEOUT | INVALID.  A claim is one conditional
``UPDATE ... WHERE id IN (candidates) AND state='WAITING'`` whose RETURNING
rows are the requests this worker won; a finish is a conditional UPDATE on
``state='RUNNING' AND worker=?`` so a request that was requeued or finished
elsewhere refuses it.  Worker names must be unique per live worker process.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from typing import Any, Self

import sqlalchemy as sa
from sqlalchemy.dialects.postgresql import insert as _pg_insert
from sqlalchemy.dialects.sqlite import insert as _sqlite_insert

from ensemble.errors import RunExistsError, StorageError
from ensemble.result import TrialState
from ensemble.storage import jsonenc, schema
from ensemble.storage.base import BaseStorage
from ensemble.storage.checks import check_worker as _check_worker
from ensemble.storage.checks import finished_state, number
from ensemble.storage.engine import Database, db_ago, db_now
from ensemble.storage.models import configurations, requests, results, run_state, runs
from ensemble.storage.records import (
    FINISHED_STATES,
    REQUEST_STATES,
    Claim,
    FinishedTrial,
    NewRequest,
    RunRecord,
    Submitted,
    TrialRow,
)
from ensemble.storage.statements import Statements

__all__ = ["SQLStorage", "Storage", "default_database_url"]

_CHUNK = 500  # bound on IN-lists (SQLite's variable limit, PostgreSQL's plan size)


def default_database_url(app_name: str) -> str:
    """A SQLite file named after the app in the current directory, e.g. ``sqlite:////cwd/blocktuner.db``."""
    slug = re.sub(r"[^a-z0-9_.-]+", "_", app_name.strip().lower()).strip("._") or "ensemble"
    return "sqlite:///" + os.path.join(os.getcwd(), f"{slug}.db")


def _chunks(seq: Sequence[Any]) -> Iterable[Sequence[Any]]:
    for i in range(0, len(seq), _CHUNK):
        yield seq[i : i + _CHUNK]


def _batch_keys(items: Sequence[NewRequest]) -> tuple[list[str], dict[str, str]]:
    """The batch's distinct hashes, sorted, and each one's first canonical JSON.

    Sorted: concurrent inserts of overlapping batches then lock rows in one
    order (no deadlock on PostgreSQL).
    """
    first_json: dict[str, str] = {}
    for it in items:
        first_json.setdefault(it.config_hash, it.config_json)
    return sorted(first_json), first_json


def _finished(row: sa.Row[Any]) -> FinishedTrial:
    return FinishedTrial(
        request_id=row.request_id,
        configuration_id=row.configuration_id,
        config_hash=row.hash,
        config_json=row.data_json,
        technique=row.technique,
        state=row.state,
        value=row.value,
        duplicate=bool(row.duplicate),
        worker=row.worker,
        cost=row.cost,
        reason=row.reason,
        finished_at=row.finished_at,
        metrics=jsonenc.loads(row.metrics_json),
        times=jsonenc.loads(row.times_json),
    )


class SQLStorage(BaseStorage):
    """Results database at a SQLAlchemy URL (``sqlite:///file.db`` or ``postgresql://...``).

    The contract is :class:`~ensemble.storage.base.BaseStorage`'s; this class
    adds only how it is kept on a SQL server.

    Opening creates an empty database at the current schema, or checks that an
    existing one is current (:class:`~ensemble.errors.SchemaVersionError`
    otherwise).  One object may be shared by threads; after ``fork`` the child
    opens its own connections automatically.
    """

    def __init__(self, url: str, *, busy_timeout_s: float = 30.0) -> None:
        self._db = Database(url, busy_timeout_s=busy_timeout_s)
        self._dialect = self._db.dialect
        self._now = db_now(self._dialect)
        try:
            schema.ensure_schema(self._db)
        except BaseException:
            self._db.dispose()
            raise
        self._sql = Statements.build(self._dialect)

    @property
    def url(self) -> str:
        """The database URL with any password masked."""
        return self._db.url

    @property
    def shareable_across_processes(self) -> bool:
        """True: any process that can reach the file or server opens the same database."""
        return True

    def close(self) -> None:
        """Release pooled connections (the object reconnects if used again)."""
        self._db.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"SQLStorage({self.url!r})"

    # ----------------------------------------------------------------- runs
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
        """Create run ``name`` and return its id; if it exists with the same space, return the existing id.

        Race-free: of two processes creating the same name, one inserts and
        both get that run.  A run of that name with a different ``space_hash``
        raises RunExistsError (choose another ``--run-name``).
        """
        if not isinstance(name, str) or not name.strip():
            raise StorageError(f"run name {name!r} must be a non-empty string; pass --run-name NAME")
        texts = {
            key: val if isinstance(val, str) else jsonenc.dumps(val, where=key)
            for key, val in (("space_json", space_json), ("objective_json", objective_json),
                             ("settings_json", settings_json))
        }
        insert = _pg_insert if self._dialect == "postgresql" else _sqlite_insert
        stmt = (
            insert(runs)
            .values(name=name, app=app, space_hash=space_hash, status="created",
                    created_at=self._now, updated_at=self._now, **texts)
            .on_conflict_do_nothing(index_elements=[runs.c.name])
            .returning(runs.c.id)
        )
        with self._db.begin() as conn:
            run_id = conn.execute(stmt).scalar()
            if run_id is not None:
                return int(run_id)
            existing = conn.execute(sa.select(runs.c.id, runs.c.space_hash).where(runs.c.name == name)).one()
        if existing.space_hash != space_hash:
            raise RunExistsError(
                f"run {name!r} already exists in {self.url} with a different search space "
                f"(space hash {existing.space_hash[:12]}..., this one {space_hash[:12]}...); "
                "pass another --run-name, or use another --database"
            )
        return int(existing.id)

    def _run_record(self, row: sa.Row[Any]) -> RunRecord:
        return RunRecord(**row._asdict())

    def get_run(self, name: str) -> RunRecord | None:
        """The run called ``name``, or None."""
        with self._db.begin(write=False) as conn:
            row = conn.execute(sa.select(runs).where(runs.c.name == name)).first()
        return None if row is None else self._run_record(row)

    def list_runs(self) -> list[RunRecord]:
        """Every run, oldest first."""
        with self._db.begin(write=False) as conn:
            rows = conn.execute(sa.select(runs).order_by(runs.c.id)).all()
        return [self._run_record(r) for r in rows]

    def set_run_status(self, run_id: int, status: str) -> None:
        """Record a run's status (e.g. "running", "finished") and touch ``updated_at``."""
        with self._db.begin() as conn:
            done = conn.execute(
                sa.update(runs).where(runs.c.id == run_id).values(status=status, updated_at=self._now)
            ).rowcount
        if done != 1:
            raise StorageError(f"run_id={run_id!r} does not exist in {self.url}; use an id from create_run/get_run")

    # ------------------------------------------------------------- requests
    def add_requests(
        self, run_id: int, items: Sequence[NewRequest], *, claim_for: str | None = None
    ) -> list[int]:
        """Insert requests in one transaction and return their ids in order.

        New configurations are inserted (unique per run by hash).  An item with
        ``duplicate=True`` is stored already finished with a copy of the
        earliest measured result of its configuration (cost 0: it was not
        measured); it never becomes WAITING.  If that configuration has no
        finished result yet, StorageError is raised and nothing is written.

        ``claim_for=worker`` inserts the other items already claimed by that
        worker: RUNNING, ``worker`` set, ``claimed_at`` and ``heartbeat_at``
        stamped, exactly the row a ``claim`` right after the insert would
        leave, but in the same transaction (one commit instead of two).  For a
        caller that measures what it proposes itself (the same-thread loop);
        no other worker can see these requests WAITING.  :meth:`add_and_claim`
        also returns the :class:`Claim` records.
        """
        ids, _claims = self._insert_requests(run_id, items, claim_for)
        return ids

    def add_and_claim(self, run_id: int, items: Sequence[NewRequest], worker: str) -> tuple[list[int], list[Claim]]:
        """``add_requests(run_id, items, claim_for=worker)`` plus the claims, in item order.

        Returns (ids of every item, a Claim for each non-duplicate item): what
        ``add_requests`` then ``claim`` would give, in one transaction, so the
        same-thread measurement needs neither a second commit nor a read back.
        """
        return self._insert_requests(run_id, items, worker)

    def _insert_requests(
        self, run_id: int, items: Sequence[NewRequest], claim_for: str | None
    ) -> tuple[list[int], list[Claim]]:
        if claim_for is not None:
            _check_worker(claim_for)
        if not items:
            return [], []
        hashes, first_json = _batch_keys(items)
        sql = self._sql
        fresh = TrialState.RUNNING if claim_for is not None else TrialState.WAITING
        with self._db.begin() as conn:
            # one statement when every configuration is new (the usual case); a SELECT for stored ones
            config_ids, _ = self._config_ids(conn, run_id, hashes, first_json, sql.config_ids)
            sources = self._duplicate_sources(conn, run_id, items, config_ids)
            ids = conn.execute(
                sql.request_insert if claim_for is None else sql.request_insert_claimed,
                [
                    {
                        "run_id": run_id,
                        "configuration_id": config_ids[it.config_hash],
                        "technique": it.technique,
                        "state": sources[it.config_hash].state if it.duplicate else fresh,
                        "duplicate": bool(it.duplicate),
                        "worker": None if it.duplicate else claim_for,
                        "limit_s": it.limit_s,
                        "finished_at": None,
                    }
                    for it in items
                ],
            ).scalars().all()
            dup_ids = [rid for rid, it in zip(ids, items) if it.duplicate]
            if dup_ids:
                conn.execute(sql.mark_finished, {"ids": dup_ids})
                conn.execute(
                    sql.result_insert,
                    [
                        {**sources[it.config_hash]._asdict(), "request_id": rid, "run_id": run_id,
                         "configuration_id": config_ids[it.config_hash], "cost": 0.0}
                        for rid, it in zip(ids, items)
                        if it.duplicate
                    ],
                )
        claims = [] if claim_for is None else [
            Claim(int(rid), config_ids[it.config_hash], it.config_json, it.limit_s)
            for rid, it in zip(ids, items)
            if not it.duplicate
        ]
        return [int(i) for i in ids], claims

    def submit(
        self, run_id: int, items: Sequence[NewRequest], *, claim_for: str | None = None,
        budget: int | None = None,
    ) -> Submitted:
        """Insert requests so that each configuration is measured at most once in the run.

        For several search drivers sharing one run (a search per MPI rank), each
        knowing only its own requests.  In one transaction, a non-duplicate item
        whose configuration already has a measured request in the run is not
        measured again: if that request has finished, the item is stored as a
        duplicate of its result (status ``"duplicate"``); if it is still WAITING
        or RUNNING, nothing is inserted and the caller waits for that request
        (``"pending"``, ``wait_for``).  A configuration repeated in ``items`` is
        inserted once, the repeats are ``"pending"`` on it.  With ``budget``, at
        most ``budget`` measured (non-duplicate) requests exist in the run after
        the call, counted over every driver; the items beyond it are
        ``"over_budget"``.  Duplicate items and ``claim_for`` behave as in
        :meth:`add_requests`.

        Atomic between processes: SQLite serialises writers (BEGIN IMMEDIATE);
        PostgreSQL locks the stored configurations (a new one is locked by its
        own uncommitted insert) and, with a budget, the run row, so two
        submitters of one configuration or one budget take turns.  The
        configurations of ``"pending"`` and ``"over_budget"`` items are stored
        without a request.
        """
        if claim_for is not None:
            _check_worker(claim_for)
        if not items:
            return Submitted([], [], {}, [], None)
        hashes, first_json = _batch_keys(items)
        sql = self._sql
        fresh = TrialState.RUNNING if claim_for is not None else TrialState.WAITING
        status = ["duplicate" if it.duplicate else "new" for it in items]
        wait_for: dict[int, int] = {}
        used: int | None = None
        with self._db.begin() as conn:
            if budget is not None:
                conn.execute(sql.lock_run, {"run_id": run_id})
            # configurations inserted here are new to the run: no other request can measure them
            config_ids, stored = self._config_ids(conn, run_id, hashes, first_json, sql.config_ids_locked)
            # stored configurations: is one of their measured requests finished, or still in flight?
            finished_cfg: set[int] = set()
            in_flight: dict[int, int] = {}
            asked = sorted({config_ids[items[i].config_hash] for i, st in enumerate(status)
                            if st == "new" and items[i].config_hash in stored})
            for chunk in _chunks(asked):
                for cid, rid, state in conn.execute(sql.measured_of, {"ids": list(chunk)}):
                    if state in FINISHED_STATES:
                        finished_cfg.add(cid)
                    else:
                        in_flight.setdefault(cid, int(rid))
            left = None
            if budget is not None:
                used = int(conn.execute(sql.count_measured, {"run_id": run_id}).scalar_one())
                left = budget - used
            first_new: dict[str, int] = {}       # hash -> index of the item that measures it in this batch
            over: set[str] = set()
            for i, it in enumerate(items):
                if status[i] != "new":
                    continue
                cid = config_ids[it.config_hash]
                if cid in finished_cfg:
                    status[i] = "duplicate"
                elif cid in in_flight:
                    status[i] = "pending"
                    wait_for[i] = in_flight[cid]
                elif it.config_hash in first_new:
                    status[i] = "pending"        # its id is filled in after the insert
                elif it.config_hash in over or (left is not None and left <= 0):
                    status[i] = "over_budget"
                    over.add(it.config_hash)
                else:
                    first_new[it.config_hash] = i
                    if left is not None:
                        left -= 1
            placed = [i for i, st in enumerate(status) if st in ("new", "duplicate")]
            dup_items = [items[i] for i in placed if status[i] == "duplicate"]
            sources = self._duplicate_sources(conn, run_id, dup_items, config_ids, every=True)
            ids: list[int | None] = [None] * len(items)
            if placed:
                inserted = conn.execute(
                    sql.request_insert if claim_for is None else sql.request_insert_claimed,
                    [
                        {
                            "run_id": run_id,
                            "configuration_id": config_ids[items[i].config_hash],
                            "technique": items[i].technique,
                            "state": sources[items[i].config_hash].state if status[i] == "duplicate" else fresh,
                            "duplicate": status[i] == "duplicate",
                            "worker": None if status[i] == "duplicate" else claim_for,
                            "limit_s": items[i].limit_s,
                            "finished_at": None,
                        }
                        for i in placed
                    ],
                ).scalars().all()
                for i, rid in zip(placed, inserted):
                    ids[i] = int(rid)
                dup_ids = [ids[i] for i in placed if status[i] == "duplicate"]
                if dup_ids:
                    conn.execute(sql.mark_finished, {"ids": dup_ids})
                    conn.execute(
                        sql.result_insert,
                        [
                            {**sources[items[i].config_hash]._asdict(), "request_id": ids[i], "run_id": run_id,
                             "configuration_id": config_ids[items[i].config_hash], "cost": 0.0}
                            for i in placed
                            if status[i] == "duplicate"
                        ],
                    )
            if used is not None:
                used += len(first_new)
        for i, st in enumerate(status):
            if st == "pending" and i not in wait_for:
                rid = ids[first_new[items[i].config_hash]]
                assert rid is not None
                wait_for[i] = rid
        claims = [] if claim_for is None else [
            Claim(int(ids[i]), config_ids[items[i].config_hash], items[i].config_json, items[i].limit_s)  # type: ignore[arg-type]
            for i in placed
            if status[i] == "new"
        ]
        return Submitted(ids, status, wait_for, claims, used)

    def _config_ids(self, conn: sa.Connection, run_id: int, hashes: Sequence[str], first_json: dict[str, str],
                    select_stored: Any) -> tuple[dict[str, int], list[str]]:
        """Insert the run's new configurations, look up the stored ones: (hash -> id, stored hashes).

        ``select_stored`` reads configurations already in the run
        (``config_ids``, or ``config_ids_locked`` where the caller must hold them).
        """
        config_ids: dict[str, int] = dict(
            conn.execute(
                self._sql.config_insert_ids,
                [{"run_id": run_id, "hash": h, "data_json": first_json[h]} for h in hashes],
            ).all()
        )
        stored = [h for h in hashes if h not in config_ids]
        for chunk in _chunks(stored):
            config_ids.update({h: i for h, i in conn.execute(select_stored, {"run_id": run_id, "hashes": chunk})})
        return config_ids, stored

    def _duplicate_sources(
        self, conn: sa.Connection, run_id: int, items: Sequence[NewRequest], config_ids: dict[str, int],
        *, every: bool = False,
    ) -> dict[str, sa.Row[Any]]:
        """The earliest measured result of each configuration that a duplicate item (every item) refers to."""
        sources: dict[str, sa.Row[Any]] = {}
        for it in items:
            if not (it.duplicate or every) or it.config_hash in sources:
                continue
            row = conn.execute(
                self._sql.duplicate_source, {"configuration_id": config_ids[it.config_hash]}
            ).first()
            if row is None:
                raise StorageError(
                    f"NewRequest(config_hash={it.config_hash!r}, duplicate=True) in run {run_id}: that "
                    "configuration has no finished result to copy; submit it with duplicate=False, or wait "
                    "for its result (result_for_hash) before marking repeats as duplicates"
                )
            sources[it.config_hash] = row
        return sources

    def claim(self, run_id: int, worker: str, n: int = 1) -> list[Claim]:
        """Atomically move up to ``n`` WAITING requests (oldest first) to RUNNING for ``worker``.

        Returns only the requests this call won; [] when none are waiting.
        PostgreSQL skips rows another claimer has locked (FOR UPDATE SKIP
        LOCKED); SQLite serialises writers, so candidates are never contested.
        """
        _check_worker(worker)
        if n < 1:
            return []
        with self._db.begin() as conn:
            rows = conn.execute(self._sql.claim_pick, {"run_id": run_id, "n": n}).all()
            if not rows:
                return []
            won = set(
                conn.execute(self._sql.claim_update, {"ids": [r.id for r in rows], "b_worker": worker}).scalars()
            )
        return [Claim(r.id, r.configuration_id, r.data_json, r.limit_s) for r in rows if r.id in won]

    def heartbeat(self, request_ids: Sequence[int], worker: str) -> int:
        """Touch the heartbeat of requests still RUNNING by ``worker``; return how many were."""
        ids = list(request_ids)
        touched = 0
        if not ids:
            return 0
        with self._db.begin() as conn:
            for chunk in _chunks(ids):
                touched += conn.execute(self._sql.heartbeat, {"ids": list(chunk), "b_worker": worker}).rowcount
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
        """Store the result of a request RUNNING by ``worker`` and commit; False (nothing written) otherwise.

        ``value`` NaN is stored as None; infinities are kept.
        """
        state = finished_state(state)
        value_f, cost_f = number(value, "value"), number(cost, "cost")
        metrics_json = jsonenc.dumps(metrics or {}, where="metrics")
        times_json = jsonenc.dumps(list(times or ()), where="times")
        with self._db.begin() as conn:
            row = conn.execute(
                self._sql.finish_update, {"rid": request_id, "b_worker": worker, "b_state": state}
            ).first()
            if row is None:
                return False
            conn.execute(
                self._sql.result_insert,
                {"request_id": request_id, "run_id": row.run_id, "configuration_id": row.configuration_id,
                 "state": state, "value": value_f, "metrics_json": metrics_json, "times_json": times_json,
                 "cost": cost_f, "reason": reason},
            )
        return True

    def requeue_stale(self, run_id: int, older_than_s: float) -> int:
        """Return RUNNING requests whose heartbeat is older than ``older_than_s`` (database clock) to WAITING."""
        with self._db.begin() as conn:
            return conn.execute(
                sa.update(requests)
                .where(
                    requests.c.run_id == run_id,
                    requests.c.state == TrialState.RUNNING,
                    sa.or_(requests.c.heartbeat_at.is_(None),
                           requests.c.heartbeat_at < db_ago(self._dialect, older_than_s)),
                )
                .values(state=TrialState.WAITING, worker=None, claimed_at=None, heartbeat_at=None)
            ).rowcount

    def withdraw_waiting(self, run_id: int, request_ids: Sequence[int]) -> list[int]:
        """Delete those of ``request_ids`` that are still WAITING (never claimed, so without results).

        Why: a search that stops on its time limit or target leaves the queue
        it kept ahead for its workers; those requests would read as a run in
        progress, and a worker attached later would still measure them after
        the search is over. RUNNING requests are left to finish. Only the
        caller's own requests are named, so under MPI with a search per rank
        one rank's stop leaves the other ranks' queues alone. Returns the
        ids deleted.
        """
        withdrawn: list[int] = []
        with self._db.begin() as conn:
            for chunk in _chunks(list(request_ids)):
                withdrawn += [int(r[0]) for r in conn.execute(
                    sa.delete(requests).where(requests.c.run_id == run_id, requests.c.state == TrialState.WAITING,
                                              requests.c.id.in_(list(chunk))).returning(requests.c.id)
                )]
        return withdrawn

    # --------------------------------------------------------------- reading
    def finished_since(self, run_id: int, after_request_id: int) -> list[FinishedTrial]:
        """Finished requests with id > ``after_request_id``, in request-id order.

        Requests finish out of id order, so a reader should pass one less than
        the lowest request id it has not yet seen finished, and skip request
        ids it already has: that never misses a result, even on PostgreSQL
        where transactions commit out of order.
        """
        params = {"run_id": run_id, "after": after_request_id}
        with self._db.begin(write=False) as conn:
            return [_finished(r) for r in conn.execute(self._sql.finished_since, params)]

    def result_for_hash(self, run_id: int, config_hash: str) -> FinishedTrial | None:
        """The earliest measured (non-duplicate) result for a configuration of this run, or None."""
        with self._db.begin(write=False) as conn:
            row = conn.execute(self._sql.result_for_hash, {"run_id": run_id, "hash": config_hash}).first()
        return None if row is None else _finished(row)

    def counts(self, run_id: int) -> dict[str, int]:
        """Requests per state (every state present, duplicates included) plus summary counts.

        ``requests``: all requests; ``duplicates``: answered from the database;
        ``measured``: finished and not duplicate; ``unique``: distinct
        configurations with a measured result (the unique evaluations).
        """
        out = {s.value: 0 for s in REQUEST_STATES}
        out.update(requests=0, duplicates=0, measured=0, unique=0)
        with self._db.begin(write=False) as conn:
            rows = conn.execute(
                sa.select(requests.c.state, requests.c.duplicate, sa.func.count())
                .where(requests.c.run_id == run_id)
                .group_by(requests.c.state, requests.c.duplicate)
            ).all()
            out["unique"] = conn.execute(
                sa.select(sa.func.count(sa.distinct(requests.c.configuration_id))).where(
                    requests.c.run_id == run_id, requests.c.duplicate.is_(False),
                    requests.c.state.in_(FINISHED_STATES),
                )
            ).scalar_one()
        for state, duplicate, n in rows:
            out[state.value] += n
            out["requests"] += n
            if duplicate:
                out["duplicates"] += n
            elif state in FINISHED_STATES:
                out["measured"] += n
        return out

    def trials(self, run_id: int) -> list[TrialRow]:
        """Every request of the run with its result (if any), in request-id order."""
        stmt = (
            sa.select(
                requests.c.id, requests.c.configuration_id, configurations.c.hash, configurations.c.data_json,
                requests.c.technique, requests.c.state, requests.c.duplicate, requests.c.worker,
                requests.c.limit_s, requests.c.created_at, requests.c.claimed_at, requests.c.finished_at,
                results.c.value, results.c.cost, results.c.reason, results.c.metrics_json, results.c.times_json,
            )
            .join(configurations, configurations.c.id == requests.c.configuration_id)
            .outerjoin(results, results.c.request_id == requests.c.id)
            .where(requests.c.run_id == run_id)
            .order_by(requests.c.id)
        )
        with self._db.begin(write=False) as conn:
            rows = conn.execute(stmt).all()
        return [
            TrialRow(
                request_id=r.id, configuration_id=r.configuration_id, config_hash=r.hash,
                config_json=r.data_json, technique=r.technique, state=r.state, duplicate=bool(r.duplicate),
                worker=r.worker, limit_s=r.limit_s, created_at=r.created_at, claimed_at=r.claimed_at,
                finished_at=r.finished_at, value=r.value, cost=r.cost, reason=r.reason,
                metrics=jsonenc.loads(r.metrics_json) or {}, times=jsonenc.loads(r.times_json) or [],
            )
            for r in rows
        ]

    # ------------------------------------------------------------ run state
    def put_state(self, run_id: int, key: str, obj: Any) -> None:
        """Store a JSON-able object under ``key`` for the run (replacing any earlier one)."""
        data = jsonenc.dumps(obj, where=f"state {key!r}")
        with self._db.begin() as conn:
            conn.execute(self._sql.state_upsert, {"run_id": run_id, "key": key, "data_json": data})

    def get_state(self, run_id: int, key: str, default: Any = None) -> Any:
        """The object stored under ``key`` for the run, or ``default``."""
        with self._db.begin(write=False) as conn:
            data = conn.execute(
                sa.select(run_state.c.data_json).where(run_state.c.run_id == run_id, run_state.c.key == key)
            ).scalar()
        return default if data is None else jsonenc.loads(data)


#: The name every caller used before there was more than one store; ``Storage(url)`` opens a SQL store.
Storage = SQLStorage
