"""``--require EXPR`` / ``require=[...]``: narrow an app's space for one run without editing the app.

What a user gets (docs/RUNNING.md): every trial of the run satisfies every expression, whichever entry point
started it; the app's own space object is left as it was; a seed of the app outside the narrowed space is left
out with a warning (the app's default seed must not stop a run that excludes it), a seed file's is refused; a
bad expression stops the run before anything is written, naming the flag; the expressions are stored with the
run's settings.
"""

from __future__ import annotations

import json
import logging

import pytest

import ensemble
from ensemble import Integer, RunSettings, SearchSpace, TunerApp
from ensemble.errors import ConfigurationError
from ensemble.settings import SettingsError
from ensemble.storage import open_storage


class Bowl(TunerApp):
    """Minimum at x=3, y=7; the app's own seed (x=0, y=0) lies outside ``x >= 2``."""

    def __init__(self, args=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(args)
        self._space = SearchSpace().add(Integer("x", 0, 9), Integer("y", 0, 9))

    def space(self) -> SearchSpace:
        return self._space  # the same object every call: --require must not change it

    def seed_configurations(self) -> list[dict[str, int]]:
        return [{"x": 0, "y": 0}, {"x": 5, "y": 5}]

    def run(self, config, limit):  # type: ignore[no-untyped-def]
        return float((config["x"] - 3) ** 2 + (config["y"] - 7) ** 2 + 1)


def _trials(db: str, run_name: str) -> list[dict[str, int]]:
    with open_storage(db) as st:
        run = st.get_run(run_name)
        assert run is not None
        return [dict(t.config) for t in st.trials(run.id)]


def test_every_trial_of_a_tune_run_satisfies_the_requirements(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = f"sqlite:///{tmp_path / 'r.db'}"
    app = Bowl()
    res = ensemble.tune(app, database=db, run_name="r", test_limit=25, seed=1, require=["x >= 2", "y <= x + 3"])
    configs = _trials(db, "r")
    assert len(configs) == 25
    assert all(c["x"] >= 2 and c["y"] <= c["x"] + 3 for c in configs)
    assert {"x": 5, "y": 5} in configs and {"x": 0, "y": 0} not in configs  # the seed outside is left out
    assert res.best_config["x"] >= 2
    assert app.space().is_valid({"x": 0, "y": 9}) and len(app.space().constraints) == 0  # the app's space unchanged
    with open_storage(db) as st:
        run = st.get_run("r")
        assert run is not None
        assert json.loads(run.settings_json)["require"] == ["x >= 2", "y <= x + 3"]
    from ensemble.report import write_report

    with open_storage(db) as st:
        run = st.get_run("r")
        assert run is not None
        write_report(st, run.id, str(tmp_path / "rep"))
    best = json.loads((tmp_path / "rep" / "best.json").read_text())
    assert best["require"] == ["x >= 2", "y <= x + 3"] and best["config"] == res.best_config


def test_the_command_line_flag_narrows_the_run_and_warns_about_the_seed_left_out(tmp_path, caplog) -> None:  # type: ignore[no-untyped-def]
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with caplog.at_level(logging.WARNING, logger="ensemble"):
        status = Bowl.main(["--database", db, "--test-limit", "12", "--seed", "2", "--run-name", "c",
                            "--require", "x >= 2"], exit=False)
    assert status == 0
    assert all(c["x"] >= 2 for c in _trials(db, "c"))
    assert any("seed configuration #0" in r.getMessage() and "--require" in r.getMessage() for r in caplog.records)


def test_process_workers_and_the_ask_tell_tuner_keep_to_it_too(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = f"sqlite:///{tmp_path / 'p.db'}"
    assert Bowl.main(["--database", db, "--test-limit", "10", "--run-name", "p", "--parallelism", "2",
                      "--worker-mode", "process", "--require", "x + y <= 6", "--quiet"], exit=False) == 0
    configs = _trials(db, "p")
    # >= 10: a trial already running on the other worker when the tenth finishes is kept
    assert len(configs) >= 10 and all(c["x"] + c["y"] <= 6 for c in configs)
    tuner = ensemble.Tuner(Bowl().space(), database=db, run_name="t", test_limit=6, require=["y == 4"])
    for _ in range(6):
        c = tuner.ask()
        assert c["y"] == 4
        tuner.tell(c, float(c["x"]))
    tuner.close()


def test_a_bad_expression_stops_the_run_before_anything_is_written(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    db = tmp_path / "b.db"
    assert Bowl.main(["--database", f"sqlite:///{db}", "--test-limit", "5", "--require", "z > 1"], exit=False) == 2
    err = capsys.readouterr().err
    assert "--require 'z > 1'" in err and "z" in err
    assert not db.exists()
    with pytest.raises(ConfigurationError, match=r"--require 'x > 9': no valid configuration.*drop a --require"):
        ensemble.tune(Bowl(), database="memory://", test_limit=5, require=["x > 9"])


def test_a_seed_file_outside_the_requirement_is_refused(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A seed the user gave in the same command is not dropped quietly: the run stops and says which."""
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({"x": 1, "y": 1}))
    db = tmp_path / "s.db"
    assert Bowl.main(["--database", f"sqlite:///{db}", "--test-limit", "5", "--seed-configuration", str(seed),
                      "--require", "x >= 2"], exit=False) == 2
    err = capsys.readouterr().err
    assert "seed configuration #2" in err and "--require 'x >= 2'" in err
    assert not db.exists()


def test_settings_refuse_a_requirement_that_is_not_a_list_of_expressions() -> None:
    with pytest.raises(SettingsError, match=r"require='x >= 2'.*list"):
        RunSettings(require="x >= 2")  # type: ignore[arg-type]
    with pytest.raises(SettingsError, match=r"require.*empty"):
        RunSettings(require=["x >= 2", " "])


def test_narrowed_is_a_copy_and_no_expressions_change_nothing() -> None:
    space = SearchSpace().add(Integer("x", 0, 9))
    assert space.narrowed([]) is space
    narrow = space.narrowed(["x % 3 == 0"])
    assert narrow is not space and narrow.count_valid() == 4 and space.count_valid() == 10
    assert narrow.violated({"x": 1}) == ["--require 'x % 3 == 0'"]


def test_resume_with_other_expressions_is_refused_naming_both_fixes(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The stored expressions, the trials and the report must agree, so a resume must keep them."""
    db = f"sqlite:///{tmp_path / 'r.db'}"
    ensemble.tune(Bowl(), database=db, run_name="r", test_limit=8, seed=1, require=["x >= 2"])
    for other in (["x >= 5"], []):
        with pytest.raises(SettingsError, match=r"made with --require 'x >= 2'.*resume with the same expressions, "
                                                 r"or start a new run"):
            ensemble.tune(Bowl(), database=db, run_name="r", test_limit=16, seed=1, require=other, resume=True)
    assert len(_trials(db, "r")) == 8  # nothing was measured by the refused commands
    res = ensemble.tune(Bowl(), database=db, run_name="r", test_limit=16, seed=1, require=["x >= 2"], resume=True)
    configs = _trials(db, "r")
    assert len(configs) == 16 and all(c["x"] >= 2 for c in configs) and res.best_config["x"] >= 2
    # a run made without expressions cannot be resumed with some either
    ensemble.tune(Bowl(), database=db, run_name="plain", test_limit=4, seed=1)
    with pytest.raises(SettingsError, match=r"made with no --require, this command gives --require 'x >= 5'"):
        ensemble.tune(Bowl(), database=db, run_name="plain", test_limit=8, seed=1, require=["x >= 5"], resume=True)
