"""Issue 16: a user's first hour: every mistake gets a clear error, a failing exit status, and loses nothing.

One section per item of the issue; each test failed on the code at a8638fc.
"""

from __future__ import annotations

import json
import logging
import os
import sqlite3

import pytest

from ensemble import RunSettings
from ensemble.cli import cli_message, main
from ensemble.driver import preflight
from ensemble.driver.session import RunNotFoundError, run_app
from ensemble.errors import DatabaseLockedError, EnsembleError, MissingExtraError
from ensemble.result import TrialState
from ensemble.storage import open_storage
from tests.ensemble.driver_helpers import QuadApp, Scripted, TinyRandom, db_url
from tests.ensemble.first_hour_helpers import (
    ExitingApp,
    FailingApp,
    HangingApp,
    NeedsToolApp,
    NegativeTimeApp,
)

TECH = "tests.ensemble.driver_helpers:TinyRandom"


def _settings(tmp_path, **kw):
    kw.setdefault("database", db_url(tmp_path))
    kw.setdefault("quiet", True)
    return RunSettings(**kw)


def _rows(url, name):
    store = open_storage(url)
    try:
        return store.trials(int(store.get_run(name).id))
    finally:
        store.close()


# -- 1. main() exits like unittest.main; a run with no success fails ------------------------------

def test_main_exits_with_a_failing_status_on_an_error(tmp_path, capsys):
    argv = ["--database", "sqlite://x.db", "-t", TECH, "--test-limit", "2", "--quiet"]
    with pytest.raises(SystemExit) as exc:
        QuadApp.main(argv)
    assert exc.value.code == 2
    assert QuadApp.main(argv, exit=False) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("error: --database 'sqlite://x.db'") and "sqlite:///x.db" in err[-1]


def test_existing_run_name_exits_non_zero(tmp_path, capsys):
    argv = ["--database", db_url(tmp_path), "-t", TECH, "--test-limit", "2", "--quiet", "--run-name", "a"]
    assert QuadApp.main(argv, exit=False) == 0
    with pytest.raises(SystemExit) as exc:
        QuadApp.main(argv)
    assert exc.value.code == 2
    assert "--resume" in capsys.readouterr().err


def test_a_run_with_no_successful_trial_exits_1_with_the_reasons(tmp_path, capsys):
    status = FailingApp.main(["--database", db_url(tmp_path), "-t", TECH, "--test-limit", "9", "--seed", "3",
                              "--quiet", "--run-name", "f"], exit=False)
    assert status == 1
    err = capsys.readouterr().err
    assert "no trial finished successfully" in err
    lines = [ln for ln in err.splitlines() if " x FAILED: " in ln]
    counts = [int(ln.split("x")[0]) for ln in lines]
    assert counts == sorted(counts, reverse=True) and sum(counts) == 9
    assert any("RuntimeError: no device found" in ln for ln in lines)


# -- 2. database URLs ----------------------------------------------------------------------------

@pytest.mark.parametrize("url, fragment", [
    ("sqlite://x.db", "sqlite:///x.db"),
    ("sqlite:/x.db", "sqlite:///"),
    ("x.db", "sqlite:///"),
    ("postgres://u@h/db", "postgresql"),
    ("mysql://u@h/db", "not supported"),
    ("postgresql://u@h", "no database name"),
])
def test_every_malformed_url_gets_one_line_naming_the_form(url, fragment):
    with pytest.raises(preflight.DatabaseURLError) as exc:
        preflight.database_url(url)
    text = str(exc.value)
    assert "\n" not in text and fragment in text and url in text


def test_bare_postgresql_url_maps_to_the_installed_driver(monkeypatch):
    installed = {"psycopg2"}
    monkeypatch.setattr(preflight, "_installed", lambda m: m in installed)
    assert preflight.database_url("postgresql://u:pw@h:5/db") == "postgresql+psycopg2://u:pw@h:5/db"
    installed.add("psycopg")
    assert preflight.database_url("postgresql://u@h/db") == "postgresql+psycopg://u@h/db"
    assert preflight.database_url("postgresql+psycopg2://u@h/db") == "postgresql+psycopg2://u@h/db"  # .ci/run
    installed.clear()
    with pytest.raises(preflight.DatabaseURLError, match=r"ensemble-tuner\[postgres\]"):
        preflight.database_url("postgresql://u@h/db")


def test_the_postgres_extra_installs_the_driver_the_url_gets():
    import configparser

    cfg = configparser.ConfigParser()
    cfg.read(os.path.join(os.path.dirname(__file__), "..", "..", "setup.cfg"))
    extra = cfg["options.extras_require"]["postgres"]
    assert "psycopg2" in extra   # postgresql:// maps to postgresql+psycopg2 when psycopg 3 is absent


@pytest.mark.parametrize("cmd", [["runs"], ["best"], ["report", "--out", "r"], ["best", "--run-name", "a"]])
def test_inspection_commands_never_create_a_database(tmp_path, cmd, capsys):
    url = db_url(tmp_path, "typo.db")
    assert main([*cmd, "--database", url]) == 2
    assert not (tmp_path / "typo.db").exists()
    assert "no database at" in capsys.readouterr().err


def test_inspection_commands_share_the_default_database_and_run_name(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    assert main(["runs"]) == 2 and not (tmp_path / "ensemble.db").exists()
    assert main(["run", "tests.ensemble.driver_helpers:QuadApp", "-t", TECH, "--test-limit", "3", "--quiet",
                 "--run-name", "a"]) == 0
    assert (tmp_path / "ensemble.db").exists()
    capsys.readouterr()
    assert main(["best", "--run-name", "a"]) == 0
    assert json.loads(capsys.readouterr().out)["run"] == "a"
    assert main(["best", "--run", "a"]) == 0            # the old spelling stays an alias
    capsys.readouterr()
    assert main(["best", "--run-name", "nope"]) == 2
    err = capsys.readouterr().err
    assert "--run-name 'nope'" in err and "'a'" in err


# -- 3. trial limits hold -----------------------------------------------------------------------

def test_process_worker_past_its_limit_is_killed_replaced_and_recorded_timeout(tmp_path):
    url = db_url(tmp_path)
    script = [{"x": 0, "y": 0}, {"x": 7, "y": 3}]
    res = run_app(HangingApp(), _settings(tmp_path, worker_mode="process", parallelism=1, trial_limit=0.5,
                                          run_name="hang", test_limit=2),
                  technique=Scripted(script))
    rows = {(r.config["x"], r.config["y"]): r for r in _rows(url, "hang")}
    assert rows[(0, 0)].state == TrialState.TIMEOUT and "killed and replaced" in rows[(0, 0)].reason
    assert rows[(7, 3)].state == TrialState.OK          # the replacement worker measured the next one
    assert res.best_config == {"x": 7, "y": 3}


def test_a_thread_past_its_limit_is_abandoned_replaced_and_recorded_timeout(tmp_path):
    """issue 16: with threads the whole run hung on a time.sleep(1000) objective."""
    url = db_url(tmp_path)
    res = run_app(HangingApp(), _settings(tmp_path, parallelism=2, trial_limit=0.3, run_name="th", test_limit=3),
                  technique=Scripted([{"x": 0, "y": 0}, {"x": 7, "y": 3}, {"x": 1, "y": 1}]))
    rows = {(r.config["x"], r.config["y"]): r for r in _rows(url, "th")}
    assert rows[(0, 0)].state == TrialState.TIMEOUT and "abandoned and replaced" in rows[(0, 0)].reason
    assert rows[(7, 3)].state == TrialState.OK and rows[(1, 1)].state == TrialState.OK
    assert res.best_config == {"x": 7, "y": 3}


def test_thread_mode_says_once_at_start_that_limits_cannot_interrupt_python(tmp_path, caplog):
    caplog.set_level(logging.WARNING, logger="ensemble")
    run_app(QuadApp(), _settings(tmp_path, trial_limit=5.0, test_limit=3), technique=TinyRandom(seed=1))
    notes = [r for r in caplog.records if "cannot interrupt Python code" in r.getMessage()]
    assert len(notes) == 1 and "--worker-mode process" in notes[0].getMessage()
    caplog.clear()
    run_app(QuadApp(), _settings(tmp_path, test_limit=3), technique=TinyRandom(seed=1))
    assert not [r for r in caplog.records if "cannot interrupt" in r.getMessage()]


# -- 4. checked before the first trial ------------------------------------------------------------

def _fresh(tmp_path):
    app = QuadApp()
    return app, tmp_path / "t.db"


def test_unwritable_report_dir_fails_before_the_first_trial(tmp_path):
    blocker = tmp_path / "bench"
    blocker.write_text("#!/bin/sh\n")
    app, db = _fresh(tmp_path)
    with pytest.raises(EnsembleError, match="--report"):
        run_app(app, _settings(tmp_path, report_dir=str(blocker / "out"), test_limit=3), technique=TinyRandom())
    assert app.calls == 0 and not db.exists()


def test_unwritable_results_log_fails_before_the_run_is_marked_running(tmp_path):
    app, db = _fresh(tmp_path)
    with pytest.raises(EnsembleError, match="--results-log"):
        run_app(app, _settings(tmp_path, results_log=str(tmp_path / "no" / "such" / "log.jsonl"), test_limit=3),
                technique=TinyRandom())
    assert app.calls == 0 and not db.exists()
    # a log that cannot be opened after all (a race) still leaves the run interrupted, not "running"
    (tmp_path / "adir").mkdir()
    with pytest.raises(OSError):
        from ensemble.driver import session as session_mod

        s = session_mod.RunSession(app, _settings(tmp_path, test_limit=3, run_name="r"), technique=TinyRandom())
        orig = preflight.check_results_log
        preflight.check_results_log = lambda p: None
        try:
            s.settings = s.settings.replace(results_log=str(tmp_path / "adir"))
            from ensemble.driver.loops import run_local

            run_local(s)
        finally:
            preflight.check_results_log = orig
    with sqlite3.connect(db) as con:
        assert con.execute("SELECT status FROM runs WHERE name='r'").fetchone()[0] == "interrupted"


def test_resume_of_a_missing_run_lists_the_runs_there(tmp_path):
    run_app(QuadApp(), _settings(tmp_path, run_name="first", test_limit=2), technique=TinyRandom())
    with pytest.raises(RunNotFoundError) as exc:
        run_app(QuadApp(), _settings(tmp_path, run_name="frist", resume=True, test_limit=2), technique=TinyRandom())
    assert "'first'" in str(exc.value) and "--resume" in str(exc.value)
    with sqlite3.connect(tmp_path / "t.db") as con:
        assert [n for (n,) in con.execute("SELECT name FROM runs")] == ["first"]


def test_resume_on_a_new_database_file_creates_nothing(tmp_path):
    with pytest.raises(EnsembleError, match="no database at"):
        run_app(QuadApp(), _settings(tmp_path, database=db_url(tmp_path, "new.db"), resume=True, test_limit=2),
                technique=TinyRandom())
    assert not (tmp_path / "new.db").exists()


def test_negative_time_is_a_failed_trial_never_the_best(tmp_path):
    res = run_app(NegativeTimeApp(), _settings(tmp_path, run_name="n", test_limit=2),
                  technique=Scripted([{"x": 0, "y": 0}, {"x": 7, "y": 3}]))
    assert res.best_config == {"x": 7, "y": 3} and res.best_value == 1.0
    bad = next(r for r in _rows(db_url(tmp_path), "n") if r.config["x"] == 0)
    assert bad.state == TrialState.FAILED and "finite and >= 0" in bad.reason


def test_sys_exit_in_run_is_a_failed_trial_with_a_message(tmp_path):
    res = run_app(ExitingApp(), _settings(tmp_path, run_name="e", test_limit=2),
                  technique=Scripted([{"x": 0, "y": 0}, {"x": 7, "y": 3}]))
    assert res.best_config == {"x": 7, "y": 3}
    bad = next(r for r in _rows(db_url(tmp_path), "e") if r.config["x"] == 0)
    assert bad.state == TrialState.FAILED and "SystemExit" in bad.reason and "sys.exit" in bad.reason


def test_missing_backend_is_refused_at_start(tmp_path):
    app = NeedsToolApp()
    with pytest.raises(MissingExtraError, match="pip install"):
        run_app(app, _settings(tmp_path, test_limit=3), technique=TinyRandom())
    assert app.calls == 0 and not (tmp_path / "t.db").exists()


def test_stencil_cuda_without_pycuda_is_refused_at_start(monkeypatch):
    import importlib.util

    from apps.stencil.app import StencilApp

    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name == "pycuda" else real(name, *a))
    with pytest.raises(MissingExtraError, match=r"ensemble-tuner\[cuda\]"):
        StencilApp(stencil="j3d7pt", backend="cuda").check_environment()


def test_hls_flags_has_a_default_trial_limit():
    from apps.hls_flags.app import HlsFlagsApp

    assert HlsFlagsApp.default_trial_limit is not None and HlsFlagsApp.default_trial_limit > 0


def test_default_trial_limit_applies_when_no_flag_is_given(tmp_path):
    class Limited(QuadApp):
        default_trial_limit = 7.0

    res_rows = []
    run_app(Limited(), _settings(tmp_path, run_name="l", test_limit=1), technique=TinyRandom())
    res_rows = _rows(db_url(tmp_path), "l")
    assert {r.limit_s for r in res_rows} == {7.0}


# -- 5. one consistent CLI ----------------------------------------------------------------------

def test_version_flag(capsys):
    import ensemble

    with pytest.raises(SystemExit) as exc:
        main(["--version"])
    assert exc.value.code == 0 and ensemble.__version__ in capsys.readouterr().out


def test_messages_name_the_flags_users_type():
    msg = cli_message(DatabaseLockedError("locked for more than the busy timeout; pass a larger busy_timeout_s"))
    assert "--busy-timeout" in msg and "busy_timeout_s" not in msg


# -- 6. the convergence plot ---------------------------------------------------------------------

def test_convergence_plot_has_a_title_units_and_the_best_configuration(tmp_path):
    from ensemble.objective import Minimize
    from ensemble.report import convergence_figure

    run_app(QuadApp(), _settings(tmp_path, run_name="c", test_limit=5), technique=TinyRandom(seed=2))
    fig = convergence_figure(_rows(db_url(tmp_path), "c"), Minimize("time"), "c")
    assert "Convergence of run c" in fig._suptitle.get_text()
    ax1, ax2 = fig.axes
    assert "seconds" in ax1.get_ylabel() and "count" in ax1.get_xlabel() and "seconds" in ax2.get_xlabel()
    assert any(t.get_text().startswith("best (") and '"x"' in t.get_text() for t in fig.texts)


def test_opencl_compiler_chatter_only_with_verbose():
    """issue 16: the demo printed "8 warnings generated." per build and pyopencl's CompilerWarning."""
    pytest.importorskip("pyopencl")
    from apps.stencil.app import StencilApp

    try:
        quiet = StencilApp(pattern="star", dims=3, radius=1, size=8, backend="opencl")._make_runner()
    except Exception as exc:  # noqa: BLE001 - no OpenCL device on this machine
        pytest.skip(f"no OpenCL device: {exc}")
    loud = StencilApp(pattern="star", dims=3, radius=1, size=8, backend="opencl", verbose=True)._make_runner()
    assert quiet.build_options == ("-w",) and loud.build_options == ()
