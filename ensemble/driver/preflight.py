"""Checks made before the first trial, so a user's mistake costs seconds, not a run.

Why a module of its own: every entry point (``TunerApp.main``, ``ensemble-tuner``,
``ensemble.tune``, ``Tuner``, MPI) goes through ``RunSession.prepare()``, and
the inspection commands (``best``, ``report``, ``runs``) share the URL rules.
A mistake found here is one line naming the argument and the fix; found after
the run it was a traceback, a lost report, or a run left marked "running"
(issue 16).  Nothing here writes: paths are checked with ``os.access`` on the
nearest existing folder, never by creating files.

Database URLs: ``postgresql://`` (no driver named) is *mapped* to the driver
that is installed (``psycopg`` 3 if present, else ``psycopg2`` from the
``[postgres]`` extra), because SQLAlchemy 2.x picks psycopg 3 for a bare
``postgresql://`` while the extra installs psycopg2 (docs/storage.md).
"""

from __future__ import annotations

import importlib.util
import logging
import os
from typing import Any

from ensemble.errors import ConfigurationError, StorageError

__all__ = [
    "URL_FORMS",
    "DatabaseURLError",
    "check_report_dir",
    "check_results_log",
    "database_url",
    "existing_database",
    "sqlite_path",
    "thread_limit_notice",
]

_log = logging.getLogger("ensemble.driver")

#: the forms every URL error names
URL_FORMS = ("sqlite:///relative/file.db (three slashes; four for an absolute path: sqlite:////tmp/x.db), "
             "postgresql://user:password@host/dbname, or memory:// (this process only)")

#: SQLAlchemy dialect driver -> the module it imports and what to install
_PG_DRIVERS = {
    "psycopg2": ("psycopg2", "pip install 'ensemble-tuner[postgres]'"),
    "psycopg": ("psycopg", "pip install 'psycopg[binary]'"),
    "pg8000": ("pg8000", "pip install pg8000"),
}


class DatabaseURLError(StorageError, ValueError):
    """``--database`` is malformed, needs a driver that is missing, or names no existing database."""


def _installed(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def _bad(url: str, why: str) -> DatabaseURLError:
    return DatabaseURLError(f"--database {url!r}: {why}; use {URL_FORMS}")


def database_url(url: str) -> str:
    """``url`` checked and with the PostgreSQL driver made explicit; DatabaseURLError (one line) otherwise.

    ``memory:`` URLs pass through.  Everything else must parse as a SQLAlchemy
    URL for SQLite or PostgreSQL, with the driver installed.
    """
    if not isinstance(url, str) or not url.strip():
        raise _bad(str(url), "empty")
    if url[:7].lower() == "memory:":
        return url
    import sqlalchemy as sa

    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        raise _bad(url, "not a database URL") from None
    backend, _, driver = parsed.drivername.partition("+")
    if backend == "sqlite":
        if parsed.host:
            path = parsed.host + (f"/{parsed.database}" if parsed.database else "")
            raise DatabaseURLError(
                f"--database {url!r}: a SQLite URL has three slashes before a relative path: "
                f"sqlite:///{path} (four before an absolute one: sqlite:////abs/{path})"
            )
        return url
    if backend in ("postgresql", "postgres"):
        if backend == "postgres":
            raise _bad(url, "the scheme is postgresql, not postgres")
        if not parsed.database:
            raise _bad(url, "no database name after the host")
        if not driver:
            for name in ("psycopg", "psycopg2"):
                if _installed(name):
                    return str(parsed.set(drivername=f"postgresql+{name}").render_as_string(hide_password=False))
            raise DatabaseURLError(
                f"--database {url!r}: no PostgreSQL driver is installed; install it with "
                "pip install 'ensemble-tuner[postgres]'"
            )
        module, install = _PG_DRIVERS.get(driver, (driver, f"pip install {driver}"))
        if not _installed(module):
            raise DatabaseURLError(
                f"--database {url!r} names the driver {driver!r}, which is not installed; install it with "
                f"{install}, or write postgresql:// to use the installed one"
            )
        return url
    raise _bad(url, f"backend {backend!r} is not supported")


def sqlite_path(url: str) -> str | None:
    """The file of a SQLite file URL, or None (other backends, in-memory SQLite)."""
    if url[:7].lower() == "memory:":
        return None
    import sqlalchemy as sa

    try:
        parsed = sa.make_url(url)
    except sa.exc.ArgumentError:
        return None
    if parsed.get_backend_name() != "sqlite" or not parsed.database or parsed.database == ":memory:" \
            or parsed.database.startswith("file:"):
        return None
    return os.path.abspath(parsed.database)


def existing_database(url: str, *, what: str) -> str:
    """``url`` checked; a SQLite file must already exist (inspection commands, ``--resume``).

    ``what`` says who needs it, e.g. "--resume" or "ensemble-tuner runs".
    """
    url = database_url(url)
    path = sqlite_path(url)
    if path is not None and not os.path.exists(path):
        raise DatabaseURLError(
            f"{what}: there is no database at {path} (--database {url}); check the path "
            "(the default is sqlite:///ensemble.db in the current directory); nothing was created"
        )
    return url


def _nearest_existing(path: str) -> str:
    folder = os.path.abspath(path)
    while not os.path.exists(folder):
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    return folder


def check_report_dir(path: str | None) -> None:
    """``--report DIR`` can be written (DIR or its nearest existing parent is a writable folder)."""
    if not path:
        return
    full = os.path.abspath(path)
    if os.path.exists(full) and not os.path.isdir(full):
        raise ConfigurationError(f"--report {path!r}: {full} is a file; give a folder for the report files")
    base = _nearest_existing(full)
    if not os.path.isdir(base):
        raise ConfigurationError(f"--report {path!r}: {base} is a file, so the folder cannot be made; "
                                 "give another --report folder")
    if not os.access(base, os.W_OK | os.X_OK):
        raise ConfigurationError(f"--report {path!r}: {base} is not writable; give a folder you can write "
                                 "(e.g. --report out/report) or fix its permissions")


def check_results_log(path: str | None) -> None:
    """``--results-log FILE`` can be appended to (the file, or its folder when it does not exist yet)."""
    if not path:
        return
    full = os.path.abspath(path)
    if os.path.isdir(full):
        raise ConfigurationError(f"--results-log {path!r}: {full} is a folder; give a file name")
    if os.path.exists(full):
        if not os.access(full, os.W_OK):
            raise ConfigurationError(f"--results-log {path!r}: {full} is not writable; fix its permissions "
                                     "or give another file")
        return
    folder = os.path.dirname(full)
    if not os.path.isdir(folder):
        raise ConfigurationError(f"--results-log {path!r}: folder {folder} does not exist; create it "
                                 f"(mkdir -p {folder}) or give another file")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigurationError(f"--results-log {path!r}: folder {folder} is not writable; give another file")


def thread_limit_notice(settings: Any, *, logger: logging.Logger = _log) -> bool:
    """Say once, at start, that ``--trial-limit`` cannot interrupt Python code run in threads.

    Returns True when the notice was given.  A subprocess objective using
    ``measurement.process.run_command(argv, timeout=limit)`` is stopped by its
    own runner; a Python objective is only recorded TIMEOUT after it returns.
    """
    if settings.trial_limit is None or settings.worker_mode != "thread":
        return False
    logger.warning(
        "--trial-limit %g s: with --worker-mode thread a limit cannot interrupt Python code in run(); "
        "a trial over the limit is recorded TIMEOUT (with --parallelism > 1 its thread is abandoned and "
        "replaced; with one worker the run waits for it to return). For a hard stop use "
        "--worker-mode process (the worker is killed and replaced), or run commands with "
        "measurement.process.run_command(argv, timeout=limit)", settings.trial_limit)
    return True
