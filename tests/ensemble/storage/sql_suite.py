"""SQL stores' conformance: the shared suite plus what only a SQL database has (schema revisions).

TestSQLite and TestPostgreSQL subclass :class:`SQLConformance` and supply ``url``.
"""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from ensemble.errors import SchemaVersionError
from ensemble.storage import HEAD_REVISION, SQLStorage
from ensemble.storage.engine import db_ago
from ensemble.storage.models import SCHEMA_VERSION, requests
from tests.ensemble.storage.suite import StorageConformance


def _age_heartbeat(storage: SQLStorage, rid: int, seconds: float) -> None:
    """Rewrite the heartbeat to ``seconds`` before now on the database clock (the store's clock)."""
    with storage._db.begin() as conn:
        conn.execute(sa.update(requests).where(requests.c.id == rid)
                     .values(heartbeat_at=db_ago(storage._db.dialect, seconds)))


class SQLConformance(StorageConformance):
    @pytest.fixture
    def age_heartbeat(self):
        return _age_heartbeat

    def test_opens_a_sql_store_shared_across_processes(self, storage):
        assert isinstance(storage, SQLStorage) and storage.shareable_across_processes

    def test_fresh_database_is_stamped_at_head(self, storage):
        with storage._db.begin(write=False) as conn:
            assert conn.execute(sa.text("SELECT version_num FROM alembic_version")).scalar() == HEAD_REVISION
            assert conn.execute(sa.text("SELECT version FROM schema_info")).scalar() == SCHEMA_VERSION

    def test_unknown_revision_is_refused_with_advice(self, url, storage, make_storage):
        with storage._db.begin() as conn:
            conn.execute(sa.text("UPDATE alembic_version SET version_num = '9999'"))
        with pytest.raises(SchemaVersionError, match="newer ensemble-tuner") as err:
            make_storage(url)
        assert "pip install -U ensemble-tuner" in str(err.value)

    def test_missing_version_table_is_refused(self, url, storage, make_storage):
        with storage._db.begin() as conn:
            conn.execute(sa.text("DROP TABLE alembic_version"))
        with pytest.raises(SchemaVersionError, match="no alembic_version"):
            make_storage(url)
