"""Schema versions: create a fresh database at head, refuse an old one, upgrade on request.

A fresh database is built from ``models.metadata`` and stamped with the head
alembic revision in the same transaction (no migration replay, so opening a
new file costs milliseconds).  An existing database must already be at head:
otherwise :class:`~ensemble.errors.SchemaVersionError` tells the user the
exact command to run.  We never migrate silently, because a migration may be
slow or irreversible and other workers may still run the old code.

Creation is serialised between processes: SQLite by ``BEGIN IMMEDIATE``,
PostgreSQL by a transaction-scoped advisory lock, so two tuners starting on
the same new database cannot both create the tables.
"""

from __future__ import annotations

import os

import sqlalchemy as sa

from ensemble.errors import SchemaVersionError, StorageError
from ensemble.storage import models
from ensemble.storage.engine import Database

__all__ = [
    "HEAD_REVISION",
    "check_revision",
    "ensure_schema",
    "known_revisions",
    "upgrade",
    "upgrade_command",
]

#: The alembic revision this code reads and writes; a test checks it is the script head.
HEAD_REVISION = "0002"
MIGRATIONS_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "migrations")
_LOCK_KEY = 0x656E736D  # arbitrary constant ("ensm") for pg_advisory_xact_lock
_OUR_TABLES = frozenset(t.name for t in models.metadata.sorted_tables)

_alembic_version = sa.Table(  # alembic's own bookkeeping table, same shape alembic creates
    "alembic_version",
    sa.MetaData(),
    sa.Column("version_num", sa.String(32), nullable=False),
    sa.PrimaryKeyConstraint("version_num", name="alembic_version_pkc"),
)


def upgrade_command(url: str) -> str:
    """The shell command that upgrades the database at ``url`` (password masked)."""
    return f"ensemble-tuner db upgrade --database '{url}'"


def _alembic_config(connection: sa.Connection | None = None):  # type: ignore[no-untyped-def]
    from alembic.config import Config

    cfg = Config()
    cfg.set_main_option("script_location", MIGRATIONS_DIR)
    if connection is not None:
        cfg.attributes["connection"] = connection
    return cfg


def known_revisions() -> list[str]:
    """Every revision id shipped in ``migrations/versions``, oldest first."""
    from alembic.script import ScriptDirectory

    script = ScriptDirectory.from_config(_alembic_config())
    return [s.revision for s in reversed(list(script.walk_revisions()))]


def check_revision(current: str | None, url: str, *, head: str | None = None, known: list[str] | None = None) -> None:
    """Raise SchemaVersionError unless ``current`` is ``head`` (default: HEAD_REVISION).

    ``known`` defaults to the revisions shipped in ``migrations/versions``.
    """
    head = HEAD_REVISION if head is None else head
    if current == head:
        return
    revisions = known_revisions() if known is None else known
    if current is None or current in revisions:
        have = "no schema revision" if current is None else f"schema revision {current}"
        raise SchemaVersionError(
            f"database {url} has {have}, this ensemble-tuner needs {head}. Back the database up, "
            f"then upgrade it with: {upgrade_command(url)}"
        )
    raise SchemaVersionError(
        f"database {url} has schema revision {current!r}, which this ensemble-tuner does not know "
        f"(it knows {', '.join(revisions)}): a newer ensemble-tuner wrote it. Upgrade the package "
        "(pip install -U ensemble-tuner) or pass another --database."
    )


def _current_revision(conn: sa.Connection) -> str | None:
    return conn.execute(sa.select(_alembic_version.c.version_num)).scalar()


def _lock(conn: sa.Connection) -> None:
    if conn.dialect.name == "postgresql":
        conn.execute(sa.text("SELECT pg_advisory_xact_lock(:k)"), {"k": _LOCK_KEY})


def _create_at_head(conn: sa.Connection) -> None:
    models.metadata.create_all(conn)
    _alembic_version.create(conn)
    conn.execute(_alembic_version.insert().values(version_num=HEAD_REVISION))
    conn.execute(models.schema_info.insert().values(version=models.SCHEMA_VERSION))


def _is_fresh(conn: sa.Connection, url: str) -> bool:
    tables = set(sa.inspect(conn).get_table_names())
    if "alembic_version" in tables:
        return False
    ours = sorted(tables & _OUR_TABLES)
    if ours:
        raise SchemaVersionError(
            f"database {url} has tables {', '.join(ours)} but no alembic_version table: it was not created "
            "by ensemble-tuner or was damaged. Pass another --database (a new file or an empty database)."
        )
    return True


def ensure_schema(db: Database) -> None:
    """Create the tables at head in an empty database, or check that an existing one is at head."""
    with db.begin(write=False) as conn:
        if sa.inspect(conn).has_table("alembic_version"):
            check_revision(_current_revision(conn), db.url)
            return
    with db.begin(write=True) as conn:
        _lock(conn)
        if _is_fresh(conn, db.url):
            _create_at_head(conn)
            return
        current = _current_revision(conn)
    check_revision(current, db.url)


def upgrade(url: str, *, busy_timeout_s: float = 30.0) -> str:
    """Bring the database at ``url`` to the head revision (creating it if empty); return the revision.

    This is what ``ensemble-tuner db upgrade --database URL`` runs.  It replays
    the alembic revisions inside one transaction (PostgreSQL and SQLite both
    have transactional DDL), so a failed upgrade leaves the database as it was.
    """
    from alembic import command

    if isinstance(url, str) and url[:7].lower() == "memory:":
        raise StorageError(
            f"--database {url!r} is an in-memory store: it has no schema on disk to upgrade and lives only in "
            "its process; pass the sqlite:/// or postgresql:// URL of the database to upgrade"
        )
    db = Database(url, busy_timeout_s=busy_timeout_s)
    try:
        with db.begin_migration() as conn:  # SQLite: foreign keys off (see there), checked before commit
            _lock(conn)
            command.upgrade(_alembic_config(conn), "head")
            _check_foreign_keys(conn, db.url)
            return _current_revision(conn) or HEAD_REVISION
    finally:
        db.dispose()


def _check_foreign_keys(conn: sa.Connection, url: str) -> None:
    """Refuse to commit an upgrade that left a dangling reference (SQLite, where keys were off)."""
    if conn.dialect.name != "sqlite":
        return
    bad = conn.exec_driver_sql("PRAGMA foreign_key_check").all()
    if bad:
        raise StorageError(
            f"upgrading {url} would leave {len(bad)} rows referring to missing rows (first: {tuple(bad[0])}); "
            "nothing was changed. Restore the database from its backup, or report this with the file attached."
        )
