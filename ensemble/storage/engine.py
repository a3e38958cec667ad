"""Opening the database: engine settings, the database clock, and the one transaction helper.

Everything that touches a connection goes through :meth:`Database.begin`, which
commits on success, rolls back on any exception, and turns driver errors into
:mod:`ensemble.errors` exceptions that name the (password-masked) URL and say
what to do.  SQLite is opened for many processes on one file: WAL (readers
never block the writer; a killed process loses nothing committed),
``synchronous=NORMAL`` (no fsync per commit in WAL mode; durable against
process crashes, which is what a tuner meets), a busy timeout, and foreign
keys.  Write transactions start with ``BEGIN IMMEDIATE`` so a writer queues on
the lock up front instead of failing half-way with "database is locked" when
it upgrades a read lock (SQLite returns SQLITE_BUSY at once in that case,
without waiting for the busy timeout).

Timestamps come from the database clock (:func:`db_now`), never the host, so
heartbeats compare correctly when workers on different hosts have skewed
clocks.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import sqlalchemy as sa
from sqlalchemy import event

from ensemble.errors import DatabaseLockedError, MissingExtraError, StorageError
from ensemble.storage.lockinfo import describe_holders

__all__ = ["Database", "db_ago", "db_now", "mask_url"]

_log = logging.getLogger("ensemble.storage")

# SQLite: a millisecond UTC timestamp padded to microseconds, so SQLAlchemy's
# DateTime parser reads it and string comparison orders it correctly.
_SQLITE_NOW_FMT = "%Y-%m-%d %H:%M:%f000"
_PG_NOW = "(now() AT TIME ZONE 'utc')"


def mask_url(url: str | sa.URL) -> str:
    """The URL as text with any password replaced by ``***`` (safe for messages and logs)."""
    try:
        return sa.make_url(url).render_as_string(hide_password=True)
    except sa.exc.ArgumentError:
        return str(url)


def _set_wal(cur: Any, wait_s: float) -> None:
    """Switch a SQLite connection to WAL, retrying while another process holds the file.

    Why a loop: changing the journal mode needs an exclusive lock, and SQLite
    answers SQLITE_BUSY at once, without calling the busy handler, when another
    connection is creating the same new file or holds a read lock (seen when
    several workers open a brand-new database together).  A file already in WAL
    mode needs no switch, so the common case is one read.
    """
    deadline = time.monotonic() + wait_s
    delay = 0.005
    while True:
        try:
            mode = cur.execute("PRAGMA journal_mode").fetchone()
            if mode and str(mode[0]).lower() == "wal":
                return
            cur.execute("PRAGMA journal_mode=WAL")
            return
        except Exception as exc:  # sqlite3.OperationalError; the driver module is not imported here
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() >= deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 0.2)


def db_now(dialect: str) -> sa.ColumnElement[Any]:
    """SQL for "now" in naive UTC on the database server's clock."""
    if dialect == "sqlite":
        return sa.literal_column(f"strftime('{_SQLITE_NOW_FMT}', 'now')", sa.DateTime)
    if dialect == "postgresql":
        return sa.literal_column(_PG_NOW, sa.DateTime)
    return sa.func.current_timestamp()


def db_ago(dialect: str, seconds: float) -> sa.ColumnElement[Any]:
    """SQL for "``seconds`` before now" on the database clock, comparable with :func:`db_now` values."""
    secs = float(seconds)
    if dialect == "sqlite":
        return sa.func.strftime(_SQLITE_NOW_FMT, "now", f"{-secs:+.6f} seconds", type_=sa.DateTime)
    if dialect == "postgresql":
        interval = sa.func.make_interval(0, 0, 0, 0, 0, 0, sa.bindparam("ago_s", secs, type_=sa.Double))
        return sa.literal_column(_PG_NOW, sa.DateTime).op("-")(interval)
    raise StorageError(f"dialect {dialect!r} is not supported; use sqlite:/// or postgresql:// URLs")


def _sqlite_path_problem(url: sa.URL) -> str | None:
    """Why a SQLite file URL cannot be opened, found before SQLite gives its terse message."""
    path = url.database
    if not path or path == ":memory:" or path.startswith("file:"):
        return None
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"directory {folder} does not exist; create it (mkdir -p {folder}) or choose another --database path"
    if os.path.isdir(path):
        return f"{os.path.abspath(path)} is a directory; give a file name such as {os.path.join(path, 'ensemble.db')}"
    return None


class Database:
    """An engine plus the transaction helper; one per :class:`~ensemble.storage.Storage`."""

    def __init__(self, url: str, *, busy_timeout_s: float = 30.0) -> None:
        if busy_timeout_s <= 0:
            raise StorageError(f"busy_timeout_s={busy_timeout_s!r} must be positive (seconds to wait for a lock)")
        try:
            parsed = sa.make_url(url)
        except sa.exc.ArgumentError as exc:
            raise StorageError(
                f"--database {url!r} is not a database URL ({exc}); use sqlite:///path/to/file.db "
                "or postgresql://user:password@host/dbname"
            ) from exc
        self.url = mask_url(parsed)
        self.busy_timeout_s = float(busy_timeout_s)
        self.dialect = parsed.get_backend_name()
        self._database = parsed.database
        kwargs: dict[str, Any] = {}
        if self.dialect == "sqlite":
            problem = _sqlite_path_problem(parsed)
            if problem:
                raise StorageError(f"cannot open database {self.url}: {problem}")
            kwargs["connect_args"] = {"timeout": self.busy_timeout_s, "check_same_thread": False}
            if not parsed.database or parsed.database == ":memory:":
                kwargs["poolclass"] = sa.pool.StaticPool  # one connection, or each sees its own empty DB
        elif self.dialect == "postgresql":
            kwargs["connect_args"] = {
                "connect_timeout": max(1, int(self.busy_timeout_s)),
                # lock_timeout: wait for locks as long as SQLite would, then fail with 55P03
                # (DatabaseLockedError).  synchronous_commit=off: the same trade as SQLite's
                # synchronous=NORMAL - a killed client loses nothing it committed, a server
                # crash may lose the last fraction of a second - instead of a WAL fsync per result.
                "options": " ".join(
                    filter(None, [str(parsed.query.get("options", "")),
                                  f"-c lock_timeout={int(self.busy_timeout_s * 1000)}",
                                  "-c synchronous_commit=off"])
                ),
            }
        else:
            raise StorageError(
                f"--database {self.url}: backend {self.dialect!r} is not supported; "
                "use sqlite:///path/to/file.db or postgresql://user@host/dbname"
            )
        try:
            self.engine = sa.create_engine(parsed, **kwargs)
        except ImportError as exc:
            raise MissingExtraError(
                f"--database {self.url} needs a PostgreSQL driver that is not installed ({exc}); "
                "install it with: pip install ensemble-tuner[postgres]"
            ) from exc
        except sa.exc.NoSuchModuleError as exc:
            raise StorageError(f"--database {self.url}: {exc}; use sqlite:/// or postgresql+psycopg2:// URLs") from exc
        if self.dialect == "sqlite":
            self._install_sqlite_hooks()
        self._writer = self.engine.execution_options(ensemble_write=True)
        self._raw_errors: type[BaseException] | tuple[()] = getattr(self.engine.dialect.dbapi, "Error", ())
        self._pid = os.getpid()

    def _install_sqlite_hooks(self) -> None:
        timeout_ms = int(self.busy_timeout_s * 1000)

        @event.listens_for(self.engine, "connect")
        def _on_connect(dbapi_conn: Any, _record: Any) -> None:
            dbapi_conn.isolation_level = None  # we issue BEGIN ourselves (see _on_begin)
            cur = dbapi_conn.cursor()
            try:
                cur.execute(f"PRAGMA busy_timeout={timeout_ms}")
                _set_wal(cur, self.busy_timeout_s)
                cur.execute("PRAGMA synchronous=NORMAL")
                cur.execute("PRAGMA foreign_keys=ON")
            finally:
                cur.close()

        @event.listens_for(self.engine, "begin")
        def _on_begin(conn: sa.Connection) -> None:
            write = conn.get_execution_options().get("ensemble_write", False)
            # straight to the driver: exec_driver_sql would cost more than BEGIN itself;
            # Database.begin() maps the raw sqlite3 error this may raise
            conn.connection.driver_connection.execute(  # type: ignore[union-attr]
                "BEGIN IMMEDIATE" if write else "BEGIN"
            )

    @contextmanager
    def begin(self, *, write: bool = True) -> Iterator[sa.Connection]:
        """A connection inside one transaction: commit on success, roll back on error.

        ``write=True`` takes SQLite's write lock at the start (BEGIN IMMEDIATE);
        use ``write=False`` for pure reads so they never wait for writers.
        """
        if os.getpid() != self._pid:  # forked: never reuse the parent's sockets/file handles
            self.engine.dispose(close=False)
            self._pid = os.getpid()
        try:
            with (self._writer if write else self.engine).begin() as conn:
                yield conn
        except sa.exc.DBAPIError as exc:
            raise self.translate(exc) from exc
        except self._raw_errors as exc:  # raised by the driver outside SQLAlchemy's wrapping (BEGIN)
            raise self.translate(sa.exc.DBAPIError(None, None, exc)) from exc

    @contextmanager
    def begin_migration(self) -> Iterator[sa.Connection]:
        """A write transaction for schema upgrades; on SQLite with foreign keys off until it ends.

        Why: a migration that changes a constraint rebuilds the table (alembic
        batch mode: copy, drop, rename), and dropping ``requests`` with foreign
        keys on would cascade and delete every result.  SQLite ignores the
        pragma inside a transaction, so it is set on this connection before
        BEGIN and restored after; the caller checks the keys
        (``PRAGMA foreign_key_check``) before the transaction commits.
        """
        sqlite = self.dialect == "sqlite"
        try:
            with self._writer.connect() as conn:
                raw = conn.connection.driver_connection
                if sqlite:
                    raw.execute("PRAGMA foreign_keys=OFF")  # type: ignore[union-attr]
                try:
                    with conn.begin():
                        yield conn
                finally:
                    if sqlite:
                        raw.execute("PRAGMA foreign_keys=ON")  # type: ignore[union-attr]
        except sa.exc.DBAPIError as exc:
            raise self.translate(exc) from exc
        except self._raw_errors as exc:
            raise self.translate(sa.exc.DBAPIError(None, None, exc)) from exc

    def translate(self, exc: sa.exc.DBAPIError) -> StorageError:
        """Map a driver error to our exception with the URL and a fix."""
        orig = exc.orig if exc.orig is not None else exc
        msg = str(orig).strip().splitlines()[0] if str(orig).strip() else type(orig).__name__
        low = msg.lower()
        pgcode = getattr(orig, "pgcode", None)
        if pgcode == "40P01":
            return DatabaseLockedError(
                f"database {self.url}: this transaction deadlocked with another session and was rolled back "
                "(nothing was written); retry the call. Repeated deadlocks mean two programs update the same "
                f"rows in different orders: report it with the other program's name. (driver said: {msg})"
            )
        if "database is locked" in low or "database table is locked" in low or pgcode == "55P03":
            holders = describe_holders(self.engine, self.dialect, self._database)
            who = ("another tuner, worker, or an open sqlite3 shell holds a write transaction"
                   if self.dialect == "sqlite" else "another session holds a lock on the tuner's tables")
            scale = " or use PostgreSQL for many concurrent workers" if self.dialect == "sqlite" else ""
            return DatabaseLockedError(
                f"database {self.url} stayed locked by another process for more than the busy timeout "
                f"({self.busy_timeout_s:g} s): {who}.{holders} Finish or close that program and retry, "
                f"pass a larger busy_timeout_s{scale}. (driver said: {msg})"
            )
        if "unable to open database file" in low:
            return StorageError(
                f"cannot open database {self.url}: SQLite could not open or create the file; check that its "
                f"directory exists and is writable, or pass another --database URL. (driver said: {msg})"
            )
        if "file is not a database" in low or "malformed" in low:
            return StorageError(
                f"cannot open database {self.url}: the file is not a valid SQLite database; pass the path of an "
                f"ensemble-tuner database or a new file name. (driver said: {msg})"
            )
        if "readonly" in low or "read-only" in low:
            return StorageError(
                f"cannot write database {self.url}: it is read-only; make the file and its directory writable "
                f"or pass another --database URL. (driver said: {msg})"
            )
        if self.dialect == "postgresql" and isinstance(exc, sa.exc.OperationalError):
            return StorageError(
                f"cannot use database {self.url}: {msg}. Check that the PostgreSQL server is running and "
                "reachable, and that the user, password and database name are right (create the database "
                "with: createdb NAME)."
            )
        return StorageError(f"database error on {self.url}: {msg}")

    def dispose(self) -> None:
        """Close pooled connections (the engine stays usable and reconnects on demand)."""
        self.engine.dispose()
