"""The app API: TunerApp.main, compile/run_compiled, ensemble.tune, the ask/tell Tuner, the demo app."""

from __future__ import annotations

import json

import pytest

import ensemble
from ensemble import Integer, Result, SearchSpace
from ensemble.app import TunerApp, app_reference, load_app_class
from ensemble.errors import EnsembleError
from ensemble.storage import Storage
from tests.ensemble.driver_helpers import QuadApp, db_url

TECH = "tests.ensemble.driver_helpers:TinyRandom"


def test_main_parses_standard_flags(tmp_path, capsys):
    status = QuadApp.main(["--database", db_url(tmp_path), "-t", TECH, "--test-limit", "12", "--quiet",
                           "--run-name", "m"], exit=False)
    assert status == 0
    assert "best configuration (12 evaluations" in capsys.readouterr().out


def test_compile_then_run_compiled_in_parallel(tmp_path):
    class Compiled(QuadApp):
        def compile(self, config):
            return ("binary", config["x"], config["y"])

        def run_compiled(self, config, artifact, limit):
            assert artifact == ("binary", config["x"], config["y"])
            return float(config["x"] + config["y"])

    res = ensemble.tune(Compiled(), database=db_url(tmp_path), technique=TECH, test_limit=20, parallelism=3,
                        seed=1)
    assert res.evaluations == 20 and res.best_value == min(res.best_value, 40.0)


def test_tune_a_function(tmp_path):
    space = SearchSpace().add(Integer("a", 0, 9), Integer("b", 0, 9))
    space.require(lambda c: c["a"] != c["b"])          # a closure-style constraint
    res = ensemble.tune(lambda c: float((c["a"] - 2) ** 2 + (c["b"] - 5) ** 2), space,
                        database=db_url(tmp_path), technique=TECH, test_limit=90, seed=0)
    assert res.best_config == {"a": 2, "b": 5} and res.best_value == 0.0
    assert res.evaluations == 90


def test_ask_tell(tmp_path):
    space = SearchSpace().add(Integer("a", 0, 3))
    tuner = ensemble.Tuner(space, database=db_url(tmp_path), technique=TECH, test_limit=4, seed=0)
    seen = set()
    while not tuner.done:
        try:
            cfg = tuner.ask()
        except EnsembleError:
            break
        tuner.tell(cfg, Result(time=float(cfg["a"] + 1)))
        seen.add(cfg["a"])
    tuner.close()
    assert seen == {0, 1, 2, 3}
    assert tuner.best == ({"a": 0}, 1.0)
    st = Storage(db_url(tmp_path))
    counts = st.counts(st.get_run(tuner.run_name).id)
    assert counts["unique"] == 4 and counts["RUNNING"] == 0 and counts["WAITING"] == 0


def test_tell_for_an_unasked_config_is_refused(tmp_path):
    tuner = ensemble.Tuner(SearchSpace().add(Integer("a", 0, 3)), database=db_url(tmp_path), technique=TECH)
    with pytest.raises(ValueError, match="not asked"):
        tuner.tell({"a": 1}, 1.0)


def test_app_reference_round_trip(tmp_path):
    assert app_reference(QuadApp) == "tests.ensemble.driver_helpers:QuadApp"
    assert load_app_class("tests.ensemble.driver_helpers:QuadApp") is QuadApp
    script = tmp_path / "myapp.py"
    script.write_text("from ensemble.app import TunerApp\nclass MyApp(TunerApp):\n    pass\n")
    loaded = load_app_class(str(script))
    assert loaded.__name__ == "MyApp"
    assert app_reference(loaded) == f"{script}:MyApp"          # loadable by another process
    assert load_app_class(app_reference(loaded)) is loaded
    with pytest.raises(EnsembleError, match="Class"):
        load_app_class("tests.ensemble.driver_helpers")      # several apps: must choose


def test_missing_methods_say_what_to_define():
    with pytest.raises(NotImplementedError, match="space"):
        TunerApp().space()
    with pytest.raises(NotImplementedError, match="run"):
        TunerApp().run({}, None)


def test_demo_app_times_a_real_blocked_matmul(tmp_path):
    import numpy as np

    from apps.demo.matmul import BlockedMatmul, blocked_matmul

    a = np.arange(64, dtype=np.float32).reshape(8, 8)
    assert np.allclose(blocked_matmul(a, a, 4, 2, 8, "kji"), a @ a)
    res = ensemble.tune(BlockedMatmul(__import__("argparse").Namespace(size=64, repeats=1)),
                        database=db_url(tmp_path), technique=TECH, test_limit=4, seed=0,
                        report_dir=str(tmp_path / "rep"))
    assert res.evaluations == 4 and res.best_value > 0
    assert json.loads((tmp_path / "rep" / "best.json").read_text())["config"] == res.best_config


def test_ask_tell_with_a_technique_object(tmp_path):
    """A technique the caller built (and keeps a reference to) drives the ask/tell run."""
    from tests.ensemble.driver_helpers import TinyRandom

    mine = TinyRandom(seed=3)
    space = SearchSpace().add(Integer("a", 0, 7))
    with ensemble.Tuner(space, database=db_url(tmp_path), technique=mine, test_limit=5, seed=0) as tuner:
        assert tuner.technique is mine
        for _ in range(5):
            cfg = tuner.ask()
            tuner.tell(cfg, float(cfg["a"]))
    assert len({t.config_hash for t in mine.observed}) == 5
    with pytest.raises(ValueError, match="technique=42"):
        ensemble.Tuner(space, database=db_url(tmp_path), technique=42)
