"""The WAL switch on connect survives another process holding a brand-new file.

CI once saw ``PRAGMA journal_mode=WAL`` fail with "database is locked" in one
of two processes opening the same new file (SQLite does not call the busy
handler there); the switch now retries until the busy timeout.
"""

from __future__ import annotations

import sqlite3

import pytest

from ensemble.storage.engine import _set_wal


class _Cursor:
    """Answers ``PRAGMA journal_mode`` as a real cursor would, failing the first calls."""

    def __init__(self, failures: int, error: str = "database is locked", mode: str = "delete"):
        self.failures, self.error, self.mode, self.calls = failures, error, mode, []

    def execute(self, sql: str):
        self.calls.append(sql)
        if self.failures:
            self.failures -= 1
            raise sqlite3.OperationalError(self.error)
        if sql.endswith("=WAL"):
            self.mode = "wal"
        return self

    def fetchone(self):
        return (self.mode,)


def test_retries_while_locked_then_switches():
    cur = _Cursor(failures=3)
    _set_wal(cur, wait_s=5.0)
    assert cur.mode == "wal" and cur.calls[-1] == "PRAGMA journal_mode=WAL"


def test_already_wal_needs_no_switch():
    cur = _Cursor(failures=0, mode="wal")
    _set_wal(cur, wait_s=5.0)
    assert cur.calls == ["PRAGMA journal_mode"]


def test_other_errors_are_not_retried():
    cur = _Cursor(failures=1, error="disk I/O error")
    with pytest.raises(sqlite3.OperationalError, match="disk I/O"):
        _set_wal(cur, wait_s=5.0)
    assert len(cur.calls) == 1


def test_gives_up_after_the_busy_timeout():
    cur = _Cursor(failures=10**6)
    with pytest.raises(sqlite3.OperationalError, match="locked"):
        _set_wal(cur, wait_s=0.2)


def test_real_file_ends_in_wal(tmp_path):
    conn = sqlite3.connect(tmp_path / "x.db")
    _set_wal(conn.cursor(), wait_s=1.0)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
