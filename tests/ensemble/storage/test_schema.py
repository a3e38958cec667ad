"""Schema versions: migrations match the models, upgrades work, released databases still open."""

from __future__ import annotations

import glob
import math
import os
import shutil

import pytest
import sqlalchemy as sa

from ensemble.errors import SchemaVersionError
from ensemble.storage import HEAD_REVISION, Storage, upgrade
from ensemble.storage.models import SCHEMA_VERSION, metadata
from ensemble.storage.schema import check_revision, known_revisions, upgrade_command

DATA = os.path.join(os.path.dirname(__file__), "data")


def test_head_constant_is_the_last_shipped_revision():
    assert known_revisions()[-1] == HEAD_REVISION


def _schema_diff(url):
    from alembic.autogenerate import compare_metadata
    from alembic.migration import MigrationContext

    engine = sa.create_engine(url)
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn), metadata)
    engine.dispose()
    return diff


def test_migrations_build_exactly_the_models(tmp_path):
    url = f"sqlite:///{tmp_path / 'migrated.db'}"
    assert upgrade(url) == HEAD_REVISION
    assert _schema_diff(url) == []
    with Storage(url)._db.begin(write=False) as conn:  # and it opens without complaint
        assert conn.execute(sa.text("SELECT version FROM schema_info")).scalar() == SCHEMA_VERSION


def test_created_database_matches_models(tmp_path):
    url = f"sqlite:///{tmp_path / 'created.db'}"
    Storage(url).close()
    assert _schema_diff(url) == []


@pytest.mark.server_db
def test_migrations_build_exactly_the_models_on_postgresql(pg_url):
    assert upgrade(pg_url) == HEAD_REVISION
    assert _schema_diff(pg_url) == []
    assert upgrade(pg_url) == HEAD_REVISION  # idempotent at head


def test_upgrade_at_head_is_a_noop(tmp_path):
    url = f"sqlite:///{tmp_path / 'e.db'}"
    s = Storage(url)
    run_id = s.create_run("r", app="a", space_json="{}", space_hash="h")
    s.close()
    assert upgrade(url) == HEAD_REVISION
    assert Storage(url).get_run("r").id == run_id


def test_old_revision_is_refused_with_the_upgrade_command():
    url = "postgresql://tuner:***@db/tune"
    with pytest.raises(SchemaVersionError) as err:
        check_revision("0001", url, head="0002", known=["0001", "0002"])
    assert upgrade_command(url) in str(err.value)
    assert "ensemble-tuner db upgrade --database 'postgresql://tuner:***@db/tune'" in str(err.value)
    check_revision("0002", url, head="0002", known=["0001", "0002"])  # at head: fine


@pytest.mark.parametrize("path", sorted(glob.glob(os.path.join(DATA, "schema_*.db"))))
def test_released_database_opens(path, tmp_path):
    copy = tmp_path / os.path.basename(path)
    shutil.copy(path, copy)
    url = f"sqlite:///{copy}"
    revision = os.path.basename(path)[len("schema_"):-len(".db")]
    if revision != HEAD_REVISION:  # an older release: refused until upgraded, then readable
        with pytest.raises(SchemaVersionError, match="db upgrade"):
            Storage(url)
        upgrade(url)
    s = Storage(url)
    run = s.get_run("fixture")
    rows = s.trials(run.id)
    assert [(r.state, r.duplicate) for r in rows] == [("OK", False), ("FAILED", False), ("WAITING", False),
                                                      ("OK", True)]
    assert rows[0].metrics == {"regs": 32} and rows[1].value == math.inf and rows[3].value == 1.25
    assert s.get_state(run.id, "bandit") == {"history": [1, 2]}
    assert s.counts(run.id)["unique"] == 2


def test_there_is_a_fixture_for_the_head_revision():
    assert os.path.exists(os.path.join(DATA, f"schema_{HEAD_REVISION}.db")), (
        "add the released schema's database: python -m tests.ensemble.storage.make_schema_fixture")


_NEXT_REVISION = '''"""A pretend next release: adds runs.note.

Revision ID: 9002
Revises: HEAD
"""
import sqlalchemy as sa
from alembic import op

revision = "9002"
down_revision = "HEAD"
branch_labels = None
depends_on = None


def upgrade():
    with op.batch_alter_table("runs") as batch:
        batch.add_column(sa.Column("note", sa.Text, nullable=True))
    op.execute(sa.text("UPDATE schema_info SET version = 99"))


def downgrade():
    with op.batch_alter_table("runs") as batch:
        batch.drop_column("note")
'''


def test_released_database_is_refused_then_upgraded_by_a_newer_release(tmp_path, monkeypatch):
    """The whole path a user meets after a schema change, with a pretend revision 9002 on top of head."""
    from ensemble.storage import schema

    migrations = tmp_path / "migrations"
    shutil.copytree(schema.MIGRATIONS_DIR, migrations, ignore=shutil.ignore_patterns("__pycache__"))
    (migrations / "versions" / "9002_note.py").write_text(_NEXT_REVISION.replace("HEAD", HEAD_REVISION))
    monkeypatch.setattr(schema, "MIGRATIONS_DIR", str(migrations))
    monkeypatch.setattr(schema, "HEAD_REVISION", "9002")

    copy = tmp_path / "old.db"
    shutil.copy(os.path.join(DATA, "schema_0001.db"), copy)
    url = f"sqlite:///{copy}"
    with pytest.raises(SchemaVersionError) as err:
        Storage(url)
    assert "schema revision 0001, this ensemble-tuner needs 9002" in str(err.value)
    assert f"ensemble-tuner db upgrade --database '{url}'" in str(err.value)

    assert upgrade(url) == "9002"
    s = Storage(url)  # now accepted, data intact
    assert s.get_run("fixture").app == "demo" and len(s.trials(s.get_run("fixture").id)) == 4
    with s._db.begin(write=False) as conn:
        assert conn.execute(sa.text("SELECT version FROM schema_info")).scalar() == 99
        assert "note" in {c["name"] for c in sa.inspect(conn).get_columns("runs")}


def _raw_insert_bad_state(url):
    """Write a request with an unknown state behind the tuner's back, as another client could."""
    engine = sa.create_engine(url)
    try:
        with engine.begin() as conn:
            conn.execute(sa.text("INSERT INTO runs (name, app, space_json, space_hash, objective_json, settings_json, "
                                 "status, created_at, updated_at) VALUES ('x', 'a', '{}', 'h', '{}', '{}', "
                                 "'created', '2026-01-01', '2026-01-01')"))
            conn.execute(sa.text("INSERT INTO configurations (run_id, hash, data_json) "
                                 "SELECT id, 'h', '{}' FROM runs WHERE name = 'x'"))
            conn.execute(sa.text("INSERT INTO requests (run_id, configuration_id, technique, state, duplicate, "
                                 "created_at) SELECT run_id, id, 'T', 'DONE', false, '2026-01-01' "
                                 "FROM configurations WHERE hash = 'h'"))
    finally:
        engine.dispose()


@pytest.mark.parametrize("how", ["created", "migrated"])
def test_state_column_refuses_other_strings(tmp_path, how):
    """Schema 2: the database itself holds states to the six TrialState strings (a CHECK constraint)."""
    url = f"sqlite:///{tmp_path / 'db.db'}"
    if how == "created":
        Storage(url).close()
    else:
        shutil.copy(os.path.join(DATA, "schema_0001.db"), tmp_path / "db.db")
        upgrade(url)
    with pytest.raises(sa.exc.IntegrityError, match="CHECK constraint failed"):
        _raw_insert_bad_state(url)
    engine = sa.create_engine(url)
    with engine.connect() as conn:
        names = {t: sorted(c["name"] for c in sa.inspect(conn).get_check_constraints(t)) for t in ("requests", "results")}
    engine.dispose()
    assert names == {"requests": ["ck_requests_trial_state"], "results": ["ck_results_trial_state"]}


def test_upgrade_from_0001_keeps_every_result(tmp_path):
    """Revision 0002 rebuilds ``requests`` on SQLite; with foreign keys on, dropping it would cascade to results."""
    import sqlite3

    copy = tmp_path / "old.db"
    shutil.copy(os.path.join(DATA, "schema_0001.db"), copy)

    def count(table):
        con = sqlite3.connect(copy)
        try:
            return con.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
        finally:
            con.close()

    before = {t: count(t) for t in ("runs", "configurations", "requests", "results", "run_state")}
    assert before["results"] > 0
    upgrade(f"sqlite:///{copy}")
    assert {t: count(t) for t in before} == before
    s = Storage(f"sqlite:///{copy}")
    with s._db.begin(write=False) as conn:
        assert conn.exec_driver_sql("PRAGMA foreign_keys").scalar() == 1  # back on for the tuner's connections
        assert conn.exec_driver_sql("PRAGMA foreign_key_check").all() == []
    s.close()


@pytest.mark.server_db
def test_state_column_refuses_other_strings_on_postgresql(pg_url):
    assert upgrade(pg_url) == HEAD_REVISION
    with pytest.raises(sa.exc.IntegrityError, match="ck_requests_trial_state"):
        _raw_insert_bad_state(pg_url)

