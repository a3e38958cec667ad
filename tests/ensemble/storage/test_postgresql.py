"""The storage conformance suite on PostgreSQL (TEST_DB_URL), plus row-lock behaviour."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from ensemble.errors import DatabaseLockedError
from ensemble.storage import Storage
from tests.ensemble.storage.sql_suite import SQLConformance
from tests.ensemble.storage.suite import req

pytestmark = pytest.mark.server_db


class TestPostgreSQL(SQLConformance):
    @pytest.fixture
    def url(self, pg_url):
        return pg_url


def test_claim_skips_rows_locked_by_another_claimer(pg_url):
    s = Storage(pg_url)
    run_id = s.create_run("r", app="a", space_json="{}", space_hash="h")
    first, second = s.add_requests(run_id, [req(1), req(2)])
    engine = sa.create_engine(pg_url)
    with engine.begin() as conn:  # a claimer in the middle of its transaction
        conn.execute(sa.text("SELECT id FROM requests WHERE id = :i FOR UPDATE"), {"i": first})
        assert [c.request_id for c in s.claim(run_id, "w2", n=2)] == [second]
    engine.dispose()
    assert [c.request_id for c in s.claim(run_id, "w3", n=2)] == [first]


def test_locked_table_raises_database_locked(pg_url):
    s = Storage(pg_url, busy_timeout_s=0.3)
    run_id = s.create_run("r", app="a", space_json="{}", space_hash="h")
    s.add_requests(run_id, [req(1)])
    engine = sa.create_engine(pg_url)
    with engine.begin() as conn:
        conn.execute(sa.text("LOCK TABLE requests IN ACCESS EXCLUSIVE MODE"))
        with pytest.raises(DatabaseLockedError, match="locked by another process") as err:
            s.claim(run_id, "w")
        assert "Other sessions holding locks on its tables: backend pid" in str(err.value)
    engine.dispose()
    assert len(s.claim(run_id, "w")) == 1


def test_session_settings(pg_url):
    s = Storage(pg_url, busy_timeout_s=7)
    with s._db.begin(write=False) as conn:
        assert conn.exec_driver_sql("SHOW lock_timeout").scalar() == "7s"
        assert conn.exec_driver_sql("SHOW synchronous_commit").scalar() == "off"
        assert conn.exec_driver_sql("SHOW search_path").scalar().startswith("t_")  # URL options kept
