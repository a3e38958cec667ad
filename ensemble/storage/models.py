"""The table layout of the results database (SQLAlchemy Core).

This module is the one place that says what the schema *is*; the alembic
revisions in ``migrations/versions`` say how each released database got
there, and a test checks the two agree.  Core ``Table`` objects rather than ORM
classes: the hot path (claim, finish) is a handful of statements per trial and
the ORM's unit of work would cost more than the SQL itself.

JSON lives in TEXT columns written by :mod:`ensemble.storage.jsonenc`;
timestamps are naive UTC taken from the database clock (see ``engine.db_now``).
Request and result states are :class:`~ensemble.result.TrialState` values in
an enum column (schema 2): VARCHAR(16) holding the same strings as schema 1,
plus a CHECK constraint so no other string can be written, even by another
client; rows read back carry TrialState members.
"""

from __future__ import annotations

import sqlalchemy as sa

from ensemble.result import TrialState

__all__ = [
    "SCHEMA_VERSION",
    "configurations",
    "metadata",
    "requests",
    "results",
    "run_state",
    "runs",
    "schema_info",
    "state_type",
]

#: Integer schema version kept in ``schema_info``; bumped by every migration.
SCHEMA_VERSION = 2


def state_type() -> sa.Enum:
    """The type of a ``state`` column: TrialState, stored as its string, checked by the database.

    Not a native enum (PostgreSQL's CREATE TYPE would need its own migration
    for every new state, and SQLite has none); ``length=16`` keeps schema 1's
    column width; the CHECK constraint is named ``ck_<table>_trial_state``.
    """
    return sa.Enum(
        TrialState,
        name="trial_state",
        native_enum=False,
        create_constraint=True,
        validate_strings=True,
        values_callable=lambda states: [s.value for s in states],
        length=16,
    )

metadata = sa.MetaData(
    naming_convention={
        "ix": "ix_%(table_name)s_%(column_0_N_name)s",
        "uq": "uq_%(table_name)s_%(column_0_N_name)s",
        "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
        "pk": "pk_%(table_name)s",
        "ck": "ck_%(table_name)s_%(constraint_name)s",
    }
)

schema_info = sa.Table(
    "schema_info",
    metadata,
    sa.Column("version", sa.Integer, primary_key=True, autoincrement=False),
)

runs = sa.Table(
    "runs",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("name", sa.String(255), nullable=False, unique=True),
    sa.Column("app", sa.String(255), nullable=False),
    sa.Column("space_json", sa.Text, nullable=False),
    sa.Column("space_hash", sa.String(64), nullable=False),
    sa.Column("objective_json", sa.Text, nullable=False),
    sa.Column("settings_json", sa.Text, nullable=False),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("updated_at", sa.DateTime, nullable=False),
)

configurations = sa.Table(
    "configurations",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column("hash", sa.String(64), nullable=False),
    sa.Column("data_json", sa.Text, nullable=False),
    sa.UniqueConstraint("run_id", "hash"),
)

requests = sa.Table(
    "requests",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column(
        "configuration_id",
        sa.Integer,
        sa.ForeignKey("configurations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("technique", sa.String(255), nullable=False),
    sa.Column("state", state_type(), nullable=False),
    sa.Column("duplicate", sa.Boolean, nullable=False),
    sa.Column("worker", sa.String(255), nullable=True),
    sa.Column("limit_s", sa.Double, nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    sa.Column("claimed_at", sa.DateTime, nullable=True),
    sa.Column("heartbeat_at", sa.DateTime, nullable=True),
    sa.Column("finished_at", sa.DateTime, nullable=True),
    # claim() scans WAITING rows of a run in id order; requeue_stale() scans RUNNING ones.
    sa.Index(None, "run_id", "state", "id"),
    sa.Index(None, "configuration_id"),
)

results = sa.Table(
    "results",
    metadata,
    sa.Column("id", sa.Integer, primary_key=True),
    sa.Column(
        "request_id",
        sa.Integer,
        sa.ForeignKey("requests.id", ondelete="CASCADE"),
        nullable=False,
        unique=True,
    ),
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), nullable=False),
    sa.Column(
        "configuration_id",
        sa.Integer,
        sa.ForeignKey("configurations.id", ondelete="CASCADE"),
        nullable=False,
    ),
    sa.Column("state", state_type(), nullable=False),
    sa.Column("value", sa.Double, nullable=True),
    sa.Column("metrics_json", sa.Text, nullable=False),
    sa.Column("times_json", sa.Text, nullable=False),
    sa.Column("cost", sa.Double, nullable=True),
    sa.Column("reason", sa.Text, nullable=True),
    sa.Column("created_at", sa.DateTime, nullable=False),
    # finished_since() walks a run's results in request order.
    sa.Index(None, "run_id", "request_id"),
    sa.Index(None, "configuration_id"),
)

run_state = sa.Table(
    "run_state",
    metadata,
    sa.Column("run_id", sa.Integer, sa.ForeignKey("runs.id", ondelete="CASCADE"), primary_key=True),
    sa.Column("key", sa.String(255), primary_key=True),
    sa.Column("data_json", sa.Text, nullable=False),
)
