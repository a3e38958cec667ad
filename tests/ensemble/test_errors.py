"""Bad input: a clear error naming the fix, and nothing written half-way."""

from __future__ import annotations

import logging
import math
import sqlite3

import pytest

from ensemble import Integer, Result, SearchSpace
from ensemble.driver.local import run_app
from ensemble.errors import (
    ConfigurationError,
    DatabaseLockedError,
    InfeasibleSpaceError,
    RunExistsError,
    SpaceError,
    StorageError,
    TechniqueError,
)
from ensemble.settings import RunSettings
from ensemble.storage import Storage
from tests.ensemble.driver_helpers import QuadApp, Scripted, TinyRandom, db_url


def _no_runs(url: str) -> bool:
    return Storage(url).list_runs() == []


def _settings(tmp_path, **kw):
    kw.setdefault("quiet", True)
    return RunSettings(database=db_url(tmp_path), **kw)


def test_unknown_parameter_in_constraint(tmp_path):
    class Bad(QuadApp):
        def space(self):
            s = super().space()
            s.require("x + z < 3")
            return s

    with pytest.raises(SpaceError, match="z"):
        run_app(Bad(), _settings(tmp_path, test_limit=3), technique=TinyRandom())
    assert not (tmp_path / "t.db").exists() or _no_runs(db_url(tmp_path))


def test_empty_space(tmp_path):
    class Empty(QuadApp):
        def space(self):
            return SearchSpace()

    with pytest.raises(SpaceError, match="no parameters"):
        run_app(Empty(), _settings(tmp_path, test_limit=3), technique=TinyRandom())
    assert not (tmp_path / "t.db").exists()


def test_infeasible_space(tmp_path):
    class Infeasible(QuadApp):
        def space(self):
            s = SearchSpace().add(Integer("x", 0, 3))
            s.require("x > 5")
            return s

    with pytest.raises(InfeasibleSpaceError):
        run_app(Infeasible(), _settings(tmp_path, test_limit=3), technique=TinyRandom())
    assert not (tmp_path / "t.db").exists()


def test_unknown_technique_is_refused_before_writing(tmp_path):
    with pytest.raises(TechniqueError, match="no-such-technique"):
        run_app(QuadApp(), _settings(tmp_path, technique="no-such-technique", test_limit=3))
    assert not (tmp_path / "t.db").exists()


class _Returns(QuadApp):
    def __init__(self, value):
        super().__init__()
        self.value = value

    def run(self, config, limit):
        if config["x"] == 1:
            v = self.value
            if isinstance(v, Exception):
                raise v
            return v
        return super().run(config, limit)


@pytest.mark.parametrize("bad, reason", [
    (ValueError("kernel exploded"), "ValueError: kernel exploded"),
    (float("nan"), "ObjectiveError: "),
    ("fast", "ObjectiveError: "),
    (Result(time=float("nan")), "ObjectiveError: "),
    (None, "ObjectiveError: "),
])
def test_bad_run_outcome_is_a_failed_trial_and_the_run_goes_on(tmp_path, caplog, bad, reason):
    caplog.set_level(logging.WARNING, logger="ensemble")
    res = run_app(_Returns(bad), _settings(tmp_path, run_name="r"),
                  technique=Scripted([{"x": 1, "y": 1}, {"x": 7, "y": 3}]))
    assert res.evaluations == 2 and res.failures == 1 and res.best_config == {"x": 7, "y": 3}
    st = Storage(db_url(tmp_path))
    rows = st.trials(st.get_run("r").id)
    assert rows[0].state == "FAILED" and rows[0].reason.startswith(reason)
    assert rows[0].value is None or math.isinf(rows[0].value)
    assert any(reason.split(":")[0] in rec.getMessage() for rec in caplog.records)
    if isinstance(bad, Exception):
        assert "test_errors.py" in rows[0].reason          # where it was raised


def test_unopenable_database_url(tmp_path):
    url = f"sqlite:///{tmp_path}/no/such/dir/t.db"
    with pytest.raises(StorageError, match="does not exist"):
        run_app(QuadApp(), RunSettings(database=url, test_limit=2, quiet=True), technique=TinyRandom())
    with pytest.raises(StorageError):
        run_app(QuadApp(), RunSettings(database="nosuchdb://x", test_limit=2, quiet=True), technique=TinyRandom())


def test_locked_database(tmp_path):
    Storage(db_url(tmp_path)).close()  # create the schema
    holder = sqlite3.connect(tmp_path / "t.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        with pytest.raises(DatabaseLockedError, match="locked"):
            run_app(QuadApp(), _settings(tmp_path, test_limit=2, busy_timeout=0.2), technique=TinyRandom())
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert _no_runs(db_url(tmp_path))


def test_run_name_exists_with_a_different_space(tmp_path):
    run_app(QuadApp(), _settings(tmp_path, run_name="same", test_limit=3), technique=TinyRandom())
    with pytest.raises(RunExistsError, match="--resume"):
        run_app(QuadApp(hi=5), _settings(tmp_path, run_name="same", test_limit=3), technique=TinyRandom())
    st = Storage(db_url(tmp_path))
    assert len(st.list_runs()) == 1
    assert st.counts(st.get_run("same").id)["unique"] == 3      # nothing added to the old run
    # and with --resume it continues
    res = run_app(QuadApp(), _settings(tmp_path, run_name="same", test_limit=6, resume=True),
                  technique=TinyRandom(seed=9))
    assert res.evaluations == 6


def test_bad_settings_name_the_field():
    with pytest.raises(ValueError, match="parallelism"):
        RunSettings(parallelism=-1)
    with pytest.raises(ValueError, match="worker_mode"):
        RunSettings(worker_mode="fibers")


def test_bad_seed_configuration_is_refused_before_writing(tmp_path):
    class BadSeed(QuadApp):
        def seed_configurations(self):
            return [{"x": 99, "y": 0}]

    with pytest.raises(ValueError, match="x"):
        run_app(BadSeed(), _settings(tmp_path, test_limit=3), technique=TinyRandom())
    assert not (tmp_path / "t.db").exists()


def test_a_seed_missing_a_parameter_is_named_with_where_to_fix_it(tmp_path):
    """Session 27: a space that gained a parameter refused seeds written before it; the message names the seed,
    the parameter and where seeds come from."""
    class OldSeed(QuadApp):
        def seed_configurations(self):
            return [{"x": 1, "y": 0}, {"x": 2}]

    with pytest.raises(ConfigurationError, match=r"seed configuration #1 .*missing \['y'\].*seed_configurations"):
        run_app(OldSeed(), _settings(tmp_path, test_limit=3), technique=TinyRandom())
    assert not (tmp_path / "t.db").exists()
