"""Prebuilt Core statements for the hot path (claim, finish, add_requests, readers).

Building a SQLAlchemy statement and its cache key costs tens of microseconds
per call, more than SQLite needs to run it; a statement built once with
``bindparam`` placeholders memoises its cache key, so each call only binds
values.  One :class:`Statements` per Storage (the SQL differs by dialect:
"now" on the database clock, ``FOR UPDATE SKIP LOCKED`` on PostgreSQL).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as _pg
from sqlalchemy.dialects import sqlite as _sqlite

from ensemble.result import TrialState
from ensemble.storage.engine import db_now
from ensemble.storage.models import configurations, requests, results, run_state, runs

__all__ = ["Statements", "finished_columns"]

_b = sa.bindparam


def finished_columns() -> list[sa.ColumnElement[Any]]:
    """Columns of a :class:`~ensemble.storage.records.FinishedTrial`, from results+requests+configurations."""
    return [
        requests.c.id.label("request_id"), requests.c.configuration_id, configurations.c.hash,
        configurations.c.data_json, requests.c.technique, results.c.state, results.c.value,
        requests.c.duplicate, requests.c.worker, results.c.cost, results.c.reason, requests.c.finished_at,
        results.c.metrics_json, results.c.times_json,
    ]


def _finished_select() -> sa.Select[Any]:
    return (
        sa.select(*finished_columns())
        .select_from(results)
        .join(requests, requests.c.id == results.c.request_id)
        .join(configurations, configurations.c.id == results.c.configuration_id)
    )


@dataclass(frozen=True)
class Statements:
    """The statements Storage executes on every trial, built once for one dialect."""

    config_insert_ids: Any
    config_ids: Any
    request_insert: Any
    request_insert_claimed: Any
    duplicate_source: Any
    mark_finished: Any
    result_insert: Any
    claim_pick: Any
    claim_update: Any
    heartbeat: Any
    finish_update: Any
    finished_since: Any
    result_for_hash: Any
    state_upsert: Any
    config_ids_locked: Any
    lock_run: Any
    measured_of: Any
    count_measured: Any

    @classmethod
    def build(cls, dialect: str) -> Statements:
        now = db_now(dialect)
        insert = _pg.insert if dialect == "postgresql" else _sqlite.insert
        pick = (
            sa.select(requests.c.id, requests.c.configuration_id, requests.c.limit_s, configurations.c.data_json)
            .join(configurations, configurations.c.id == requests.c.configuration_id)
            .where(requests.c.run_id == _b("run_id"), requests.c.state == TrialState.WAITING)
            .order_by(requests.c.id)
            .limit(_b("n"))
        )
        if dialect == "postgresql":
            pick = pick.with_for_update(skip_locked=True, of=requests)
        upsert = insert(run_state)
        upsert = upsert.on_conflict_do_update(
            index_elements=[run_state.c.run_id, run_state.c.key], set_={"data_json": upsert.excluded.data_json}
        )
        return cls(
            # the common case (a new configuration) in one statement: RETURNING gives the ids of the
            # rows it inserted; only hashes already stored need the config_ids SELECT
            config_insert_ids=insert(configurations)
            .on_conflict_do_nothing(index_elements=[configurations.c.run_id, configurations.c.hash])
            .returning(configurations.c.hash, configurations.c.id),
            config_ids=sa.select(configurations.c.hash, configurations.c.id).where(
                configurations.c.run_id == _b("run_id"), configurations.c.hash.in_(_b("hashes", expanding=True))
            ),
            request_insert=sa.insert(requests)
            .values(created_at=now)
            .returning(requests.c.id, sort_by_parameter_order=True),
            # add_requests(claim_for=worker): the request is born RUNNING for that worker, with the
            # claim and heartbeat stamped in the same transaction as the insert (see Storage.add_requests)
            request_insert_claimed=sa.insert(requests)
            .values(created_at=now, claimed_at=now, heartbeat_at=now)
            .returning(requests.c.id, sort_by_parameter_order=True),
            duplicate_source=sa.select(
                results.c.state, results.c.value, results.c.metrics_json, results.c.times_json, results.c.reason
            )
            .join(requests, requests.c.id == results.c.request_id)
            .where(results.c.configuration_id == _b("configuration_id"), requests.c.duplicate.is_(False))
            .order_by(results.c.request_id)
            .limit(1),
            # duplicates never run: no claim or heartbeat stamps, also when inserted with claim_for
            mark_finished=sa.update(requests)
            .where(requests.c.id.in_(_b("ids", expanding=True)))
            .values(finished_at=now, claimed_at=None, heartbeat_at=None),
            result_insert=sa.insert(results).values(created_at=now),
            claim_pick=pick,
            claim_update=sa.update(requests)
            .where(requests.c.id.in_(_b("ids", expanding=True)), requests.c.state == TrialState.WAITING)
            .values(state=TrialState.RUNNING, worker=_b("b_worker"), claimed_at=now, heartbeat_at=now)
            .returning(requests.c.id),
            heartbeat=sa.update(requests)
            .where(requests.c.id.in_(_b("ids", expanding=True)), requests.c.worker == _b("b_worker"),
                   requests.c.state == TrialState.RUNNING)
            .values(heartbeat_at=now),
            finish_update=sa.update(requests)
            .where(requests.c.id == _b("rid"), requests.c.state == TrialState.RUNNING, requests.c.worker == _b("b_worker"))
            .values(state=_b("b_state"), finished_at=now)
            .returning(requests.c.run_id, requests.c.configuration_id),
            finished_since=_finished_select()
            .where(results.c.run_id == _b("run_id"), results.c.request_id > _b("after"))
            .order_by(results.c.request_id),
            result_for_hash=_finished_select()
            .where(configurations.c.run_id == _b("run_id"), configurations.c.hash == _b("hash"),
                   requests.c.duplicate.is_(False))
            .order_by(results.c.request_id)
            .limit(1),
            state_upsert=upsert,
            # Storage.submit (several search drivers on one run). FOR NO KEY UPDATE on PostgreSQL
            # (nothing on SQLite, whose BEGIN IMMEDIATE already serialises writers): two submitters of
            # one stored configuration, or two budgeted submitters of one run, take turns; the
            # foreign-key KEY SHARE locks of finish() and claim() do not conflict with it.
            config_ids_locked=sa.select(configurations.c.hash, configurations.c.id)
            .where(configurations.c.run_id == _b("run_id"), configurations.c.hash.in_(_b("hashes", expanding=True)))
            .order_by(configurations.c.id)
            .with_for_update(key_share=True),
            lock_run=sa.select(runs.c.id).where(runs.c.id == _b("run_id")).with_for_update(key_share=True),
            measured_of=sa.select(requests.c.configuration_id, requests.c.id, requests.c.state)
            .where(requests.c.configuration_id.in_(_b("ids", expanding=True)), requests.c.duplicate.is_(False))
            .order_by(requests.c.id),
            count_measured=sa.select(sa.func.count())
            .select_from(requests)
            .where(requests.c.run_id == _b("run_id"), requests.c.duplicate.is_(False)),
        )
