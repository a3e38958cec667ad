"""The ensemble-tuner command line: run an app, inspect a database, standard flags."""

from __future__ import annotations

import json

import pytest

from ensemble.cli import add_standard_arguments, main, settings_from_args
from ensemble.storage import Storage
from tests.ensemble.driver_helpers import db_url

APP = "tests.ensemble.driver_helpers:QuadApp"
TECH = "tests.ensemble.driver_helpers:TinyRandom"


def _run(tmp_path, *extra):
    return main(["run", APP, "--database", db_url(tmp_path), "--technique", TECH, "--quiet", *extra])


def test_run_prints_best_and_writes_report(tmp_path, capsys):
    rep = tmp_path / "rep"
    assert _run(tmp_path, "--test-limit", "30", "--seed", "1", "--run-name", "a", "--report", str(rep)) == 0
    out = capsys.readouterr().out
    assert "best configuration" in out and str(rep) in out
    assert json.loads((rep / "best.json").read_text())["evaluations"] == 30


def test_best_runs_report_subcommands(tmp_path, capsys):
    _run(tmp_path, "--test-limit", "10", "--run-name", "a")
    _run(tmp_path, "--test-limit", "5", "--run-name", "b")
    capsys.readouterr()
    assert main(["runs", "--database", db_url(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "a " in out and "b " in out and out.count("finished") == 2
    assert main(["best", "--database", db_url(tmp_path), "--run", "a"]) == 0
    best = json.loads(capsys.readouterr().out)
    assert best["run"] == "a" and best["evaluations"] == 10 and set(best["config"]) == {"x", "y"}
    assert main(["report", "--database", db_url(tmp_path), "--out", str(tmp_path / "r")]) == 0
    assert json.loads((tmp_path / "r" / "best.json").read_text())["evaluations"] == 5   # latest run


def test_errors_are_one_line_with_exit_status_2(tmp_path, capsys):
    assert _run(tmp_path, "--test-limit", "3", "--run-name", "x") == 0
    assert _run(tmp_path, "--test-limit", "3", "--run-name", "x") == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "--resume" in err
    assert main(["best", "--database", db_url(tmp_path), "--run", "nope"]) == 2
    assert "ensemble-tuner runs" in capsys.readouterr().err


def test_resume_continues_the_latest_run(tmp_path):
    assert _run(tmp_path, "--test-limit", "5", "--run-name", "r1") == 0
    assert _run(tmp_path, "--test-limit", "12", "--resume") == 0
    st = Storage(db_url(tmp_path))
    assert [r.name for r in st.list_runs()] == ["r1"]
    assert st.counts(st.get_run("r1").id)["unique"] == 12


def test_standard_flags_become_settings():
    import argparse

    p = add_standard_arguments(argparse.ArgumentParser())
    ns = p.parse_args(["-t", "Random", "--stop-after", "5", "--test-limit", "7", "--target", "0.5",
                       "--database", "sqlite:///x.db", "--run-name", "n", "--resume", "--parallelism", "3",
                       "--seed", "2", "--seed-configuration", "a.json", "--results-log", "l.jsonl",
                       "--report", "rep", "--quiet"])
    s = settings_from_args(ns)
    assert (s.technique, s.stop_after, s.test_limit, s.target, s.database, s.run_name, s.resume,
            s.parallelism, s.seed, s.seed_configurations, s.results_log, s.report_dir, s.quiet) == \
        ("Random", 5.0, 7, 0.5, "sqlite:///x.db", "n", True, 3, 2, ["a.json"], "l.jsonl", "rep", True)


def test_seed_configuration_file(tmp_path):
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({"x": 7, "y": 3}))
    assert _run(tmp_path, "--test-limit", "3", "--run-name", "s", "--seed-configuration", str(seed)) == 0
    st = Storage(db_url(tmp_path))
    first = st.trials(st.get_run("s").id)[0]
    assert first.technique == "seed" and first.config == {"x": 7, "y": 3} and first.value == 1.0


def test_list_techniques(capsys):
    assert main(["--list-techniques"]) == 0
    names = capsys.readouterr().out.split()
    assert "default" in names


def test_app_flags_reach_the_app_and_workers(tmp_path):
    from ensemble.driver.local import build_app
    from tests.ensemble.driver_helpers import FlagApp

    app = build_app(FlagApp, ["--test-limit", "3", "--offset", "5"])
    assert app.args.offset == 5
    assert main(["run", "tests.ensemble.driver_helpers:FlagApp", "--database", db_url(tmp_path), "-t", TECH,
                 "--test-limit", "4", "--offset", "5", "--run-name", "f", "--quiet"]) == 0
    st = Storage(db_url(tmp_path))
    assert json.loads(st.get_run("f").settings_json)["app_argv"][-4:] == ["5", "--run-name", "f", "--quiet"]
    assert all(r.value >= 5 for r in st.trials(st.get_run("f").id))


def test_worker_for_a_missing_run_fails_clearly(tmp_path, capsys):
    Storage(db_url(tmp_path)).close()
    assert main(["worker", "--database", db_url(tmp_path), "--run", "nope"]) == 2
    assert "no such run" in capsys.readouterr().err


def test_usage(capsys):
    with pytest.raises(SystemExit) as exc:
        main(["--help"])
    assert exc.value.code == 0


def test_run_help_shows_the_run_flags(capsys):
    """issue 16: `ensemble-tuner run --help` printed an error instead of the flags of a run."""
    assert main(["run", "--help"]) == 0
    out = capsys.readouterr().out
    assert "--test-limit" in out and "--run-name" in out and "--trial-limit" in out
    assert main(["run"]) == 2
    assert "give the app to tune" in capsys.readouterr().err


def test_db_upgrade_on_a_current_database(tmp_path, capsys):
    Storage(db_url(tmp_path)).close()
    assert main(["db", "upgrade", "--database", db_url(tmp_path)]) == 0
    assert "up to date" in capsys.readouterr().out


def _hello(argv):
    print("hello", *argv)
    return 3


def test_plugin_commands_dispatch_through_entry_points(monkeypatch, capsys):
    """``ensemble.commands`` entry points become subcommands; their exit status is returned."""
    from ensemble import cli, registry

    fake = registry.Registry("ensemble.commands", what="command",
                             source=lambda group: [("hello", "tests.ensemble.test_cli:_hello", False)])
    monkeypatch.setattr(registry, "COMMAND_REGISTRY", fake)
    assert cli.main(["hello", "a", "b"]) == 3
    assert capsys.readouterr().out.strip() == "hello a b"
    assert "hello" in cli._parser().format_help()


def test_technique_options_from_the_command_line(tmp_path, capsys):
    """--technique-option KEY=VALUE reaches the technique; VALUE is JSON, else a string; mistakes are one line."""
    import argparse

    p = add_standard_arguments(argparse.ArgumentParser())
    ns = p.parse_args(["-t", "dlmt", "--technique-option", "steps=3", "--technique-option", "rest=stop",
                       "--technique-option", 'terms="time ~ a"', "--technique-option", "reuse=false"])
    assert settings_from_args(ns).technique_options == {"steps": 3, "rest": "stop", "terms": "time ~ a",
                                                        "reuse": False}
    # a real run with an option: BayesOpt's initial design of 3 points
    assert main(["run", APP, "--database", db_url(tmp_path), "-t", "BayesOpt", "--technique-option", "initial=3",
                 "--test-limit", "6", "--quiet", "--run-name", "opt"]) == 0
    capsys.readouterr()
    assert main(["run", APP, "--database", db_url(tmp_path), "-t", "BayesOpt", "--technique-option", "initial",
                 "--test-limit", "6", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "KEY=VALUE" in err and "--technique-option" in err
    assert main(["run", APP, "--database", db_url(tmp_path), "-t", "BayesOpt", "--technique-option",
                 "no_such_option=1", "--test-limit", "6", "--quiet"]) == 2
    assert "no_such_option" in capsys.readouterr().err
