"""The storage conformance suite on a SQLite file, plus SQLite-only behaviour (pragmas, locking, bad files)."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ensemble.errors import DatabaseLockedError, StorageError
from ensemble.storage import Storage
from tests.ensemble.storage.sql_suite import SQLConformance
from tests.ensemble.storage.suite import req


class TestSQLite(SQLConformance):
    @pytest.fixture
    def url(self, sqlite_url):
        return sqlite_url


def test_sqlite_settings(sqlite_url):
    s = Storage(sqlite_url)
    with s._db.begin(write=False) as conn:
        pragmas = {p: conn.exec_driver_sql(f"PRAGMA {p}").scalar()
                   for p in ("journal_mode", "synchronous", "foreign_keys", "busy_timeout")}
    assert pragmas == {"journal_mode": "wal", "synchronous": 1, "foreign_keys": 1, "busy_timeout": 30000}


def test_missing_directory_names_url_and_fix(tmp_path):
    with pytest.raises(StorageError, match=r"does not exist; create it \(mkdir -p") as err:
        Storage(f"sqlite:///{tmp_path}/no/such/dir/x.db")
    assert str(tmp_path / "no/such/dir") in str(err.value)


def test_not_a_database_file(tmp_path):
    path = tmp_path / "junk.db"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(StorageError, match="not a valid SQLite database"):
        Storage(f"sqlite:///{path}")


@pytest.mark.parametrize("url", ["not a url", "mysqlx://u@h/db"])
def test_bad_urls_say_what_to_use(url):
    with pytest.raises(StorageError, match="sqlite:///"):
        Storage(url)


def test_unreachable_server_masks_password():
    with pytest.raises(StorageError) as err:
        Storage("postgresql+psycopg2://tuner:s3cret@127.0.0.1:1/ensemble", busy_timeout_s=2)
    text = str(err.value)
    assert "s3cret" not in text and "tuner:***@127.0.0.1:1" in text and "server is running" in text


_HOLD_LOCK = (
    "import sqlite3, sys, time\n"
    "c = sqlite3.connect(sys.argv[1], isolation_level=None)\n"
    "c.execute('BEGIN IMMEDIATE')\n"
    "print('locked', flush=True)\n"
    "sys.stdin.read()\n"
)


def test_locked_database_names_the_holder(sqlite_url, tmp_path):
    s = Storage(sqlite_url, busy_timeout_s=0.2)
    run_id = s.create_run("r", app="a", space_json="{}", space_hash="h")
    s.add_requests(run_id, [req(1)])
    holder = subprocess.Popen([sys.executable, "-c", _HOLD_LOCK, str(tmp_path / "ensemble.db")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "locked"  # another process holds the write lock
        with pytest.raises(DatabaseLockedError, match="locked by another process") as err:
            s.claim(run_id, "w")
        assert "busy_timeout_s" in str(err.value)
        assert f"Other processes with the file open: pid {holder.pid} (" in str(err.value)
        assert s.counts(run_id)["WAITING"] == 1  # readers are not blocked (WAL)
    finally:
        holder.communicate("", timeout=30)  # closing stdin ends it and releases the lock
    assert len(s.claim(run_id, "w")) == 1


def test_in_memory_database():
    s = Storage("sqlite://")
    run_id = s.create_run("r", app="a", space_json="{}", space_hash="h")
    assert s.add_requests(run_id, [req(1)]) == [1]
