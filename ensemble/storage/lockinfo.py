"""Who holds the lock: names the other processes in a DatabaseLockedError.

"database is locked" alone sends users hunting; the process id and command
line of whoever has the SQLite file open (or the PostgreSQL sessions holding
locks on our tables) usually say at once which tuner, worker or shell to
close.  Best effort only: this runs on the error path, so it never raises and
returns "" when it cannot tell (another OS, no permission).
"""

from __future__ import annotations

import os
from typing import Any

import sqlalchemy as sa

__all__ = ["describe_holders"]

_MAX = 5


def _sqlite_holders(path: str) -> list[str]:
    target = os.path.realpath(path)
    wanted = {target, target + "-wal", target + "-shm", target + "-journal"}
    me = os.getpid()
    found: list[str] = []
    try:
        pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return []
    for pid in pids:
        if pid == me:
            continue
        try:
            fds = os.listdir(f"/proc/{pid}/fd")
            if not any(os.path.realpath(f"/proc/{pid}/fd/{fd}") in wanted for fd in fds):
                continue
            with open(f"/proc/{pid}/cmdline", "rb") as fh:
                cmd = fh.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        found.append(f"pid {pid} ({cmd[:80] or '?'})")
        if len(found) >= _MAX:
            break
    return found


def _postgres_holders(engine: sa.Engine) -> list[str]:
    query = sa.text(
        "SELECT DISTINCT a.pid, a.application_name, a.client_addr, a.state FROM pg_locks l "
        "JOIN pg_stat_activity a ON a.pid = l.pid "
        "WHERE l.relation IN (SELECT c.oid FROM pg_class c WHERE c.relname IN "
        "('runs', 'configurations', 'requests', 'results', 'run_state') "
        "AND c.relnamespace = ANY (current_schemas(false)::regnamespace[])) "
        "AND l.granted AND a.pid <> pg_backend_pid() LIMIT :n"
    )
    with engine.connect() as conn:
        rows = conn.execute(query, {"n": _MAX}).all()
    return [f"backend pid {r.pid} (application {r.application_name or '?'}, client {r.client_addr or 'local'}, "
            f"{r.state})" for r in rows]


def describe_holders(engine: Any, dialect: str, database: str | None) -> str:
    """A sentence naming the other processes that have the database open (one of them holds the lock).

    Returns "" when none can be found or the platform does not say.
    """
    try:
        if dialect == "sqlite" and database and database != ":memory:":
            holders, what = _sqlite_holders(database), "Other processes with the file open"
        elif dialect == "postgresql":
            holders, what = _postgres_holders(engine), "Other sessions holding locks on its tables"
        else:
            holders, what = [], ""
    except Exception:  # noqa: BLE001 - diagnostics must never mask the real error
        return ""
    return f" {what}: {'; '.join(holders)}." if holders else ""
