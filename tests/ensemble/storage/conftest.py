"""Fixtures that hand the storage conformance suite a fresh, empty database URL per test."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator

import pytest
import sqlalchemy as sa


@pytest.fixture
def sqlite_url(tmp_path) -> str:
    return f"sqlite:///{tmp_path / 'ensemble.db'}"


@pytest.fixture
def pg_url() -> Iterator[str]:
    """A URL for a fresh PostgreSQL schema (dropped afterwards) in the TEST_DB_URL database."""
    base = os.environ.get("TEST_DB_URL")
    if not base:
        pytest.skip("PostgreSQL tests need TEST_DB_URL=postgresql+psycopg2://user@host:port/db")
    schema = "t_" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(base)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    url = sa.make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with admin.begin() as conn:
            conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
        admin.dispose()
