"""Start-up: OpenTuner's flags, technique names, and refusals before any measurement."""

from __future__ import annotations

import argparse
import logging
import sys
from typing import ClassVar

import pytest

from ensemble.compat import opentuner
from ensemble.compat.opentuner import (
    ConfigurationManipulator,
    IntegerParameter,
    MeasurementInterface,
    Result,
)
from ensemble.compat.opentuner._flags import database_url, settings_from_args
from ensemble.compat.opentuner._run import choose_technique
from ensemble.compat.opentuner.search.objective import MinimizeTime
from ensemble.storage import Storage
from tests.compat.helpers import prepare, run_app


def _args(*argv: str) -> argparse.Namespace:
    return argparse.ArgumentParser(parents=opentuner.argparsers()).parse_args(list(argv))


class Counting(MeasurementInterface):
    measured: ClassVar[list[int]] = []

    def manipulator(self):
        m = ConfigurationManipulator()
        m.add_parameter(IntegerParameter("x", 0, 30))
        return m

    def run(self, desired_result, input, limit):
        Counting.measured.append(desired_result.configuration.data["x"])
        return Result(time=abs(desired_result.configuration.data["x"] - 7))


def test_opentuner_flags_become_settings():
    s = settings_from_args(_args("--test-limit", "12", "--stop-after", "5", "--label", "r1", "--database",
                                 "tuning.db", "--seed", "3", "--results-log", "log.jsonl"))
    assert (s.test_limit, s.stop_after, s.run_name, s.seed, s.results_log) == (12, 5.0, "r1", 3, "log.jsonl")
    assert s.database == "sqlite:///tuning.db" and database_url("postgresql://h/db") == "postgresql://h/db"
    assert s.parallelism == 1                                  # OpenTuner's default 4 means one at a time here
    assert settings_from_args(_args("--parallelism", "3")).parallelism == 3
    assert _args().parallelism == 4                            # what apps read stays OpenTuner's


def test_flags_without_effect_are_warned_not_fatal(tmp_path, caplog):
    Counting.measured = []
    args = _args("--test-limit", "3", "--pipelining", "2", "--machine-class", "fast",
                 "--database", f"sqlite:///{tmp_path / 'w.db'}", "--seed", "1")
    with caplog.at_level(logging.WARNING, logger="ensemble"):
        assert Counting.main(args) == 0
    text = caplog.text
    assert "--pipelining=2 has no effect here" in text and "--machine-class='fast' has no effect" in text
    assert len(Counting.measured) == 3


def test_technique_names():
    m, obj = ConfigurationManipulator([IntegerParameter("x", 0, 3)]), MinimizeTime()
    assert choose_technique(None, m, obj, 1) == ("OpenTunerA", None)
    assert choose_technique(["AUCBanditMetaTechniqueA"], m, obj, 1) == ("OpenTunerA", None)
    assert choose_technique(["AUCBanditMetaTechniqueC"], m, obj, 1) == ("OpenTunerC", None)
    assert choose_technique(["PureRandom"], m, obj, 1) == ("Random", None)
    assert choose_technique(["NelderMead"], m, obj, 1) == ("NelderMead", None)
    name, both = choose_technique(["RandomNelderMead", "DifferentialEvolutionAlt"], m, obj, 1)
    assert name == "RoundRobin" and both is not None


def test_unknown_technique_refused_before_measuring(tmp_path, capsys):
    Counting.measured = []
    args = _args("--technique", "NoSuchTechnique", "--test-limit", "3",
                 "--database", f"sqlite:///{tmp_path / 'u.db'}")
    with pytest.raises(SystemExit) as stop:
        Counting.main(args)
    assert stop.value.code == 2
    err = capsys.readouterr().err
    assert err.count("error:") == 1 and "--technique 'NoSuchTechnique'" in err and "PureRandom" in err
    assert Counting.measured == []
    assert Storage(f"sqlite:///{tmp_path / 'u.db'}").list_runs() == []


def test_print_and_exit_flags(tmp_path, capsys):
    Counting.measured = []
    assert Counting.main(_args("--print-search-space-size")) == 0
    assert "search space size: 31" in capsys.readouterr().out
    assert Counting.main(_args("--list-techniques")) == 0
    assert "AUCBanditMetaTechniqueA" in capsys.readouterr().out
    assert Counting.measured == []


@pytest.mark.parametrize("mode", ["unchanged", "changed"])
@pytest.mark.parametrize("app, part", [("unsupported_module.py", "module 'opentuner.search.bandittechniques'"),
                                       ("unsupported_session.py", "results-database session")])
def test_unsupported_part_refused_at_start_up(tmp_path, mode, app, part):
    work = prepare(tmp_path)
    proc = run_app(app, ["--test-limit", "3", "--database", f"sqlite:///{work / 'x.db'}"], work, mode)
    assert proc.returncode != 0
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    if mode == "unchanged" or app == "unsupported_session.py":
        assert lines == [lines[-1]] and lines[-1].startswith("error: OpenTuner compatibility: ")
    assert part in proc.stderr and "not supported;" in proc.stderr
    assert not (work / "measured.txt").exists()               # nothing was measured


def test_hooks_we_never_call_are_refused_before_measuring(tmp_path, capsys):
    class Converging(Counting):
        def extra_convergence_criteria(self, result):
            return result.time < 1

    Counting.measured = []
    with pytest.raises(SystemExit):
        Converging.main(_args("--test-limit", "3", "--database", f"sqlite:///{tmp_path / 'c.db'}"))
    err = capsys.readouterr().err
    assert "MeasurementInterface.extra_convergence_criteria() (overridden by Converging) is not supported" in err
    assert "--target VALUE" in err and Counting.measured == []


def test_call_program_limits():
    mi = MeasurementInterface()
    slow = mi.call_program("sleep 5", limit=0.2)
    assert slow["timeout"] and slow["time"] == float("inf")
    big = mi.call_program([sys.executable, "-c", "x = bytearray(3 << 30)"], memory_limit=1 << 30)
    assert big["returncode"] != 0 and b"MemoryError" in big["stderr"]
    ok = mi.call_program("echo hi")
    assert ok["returncode"] == 0 and ok["stdout"] == b"hi\n" and not ok["timeout"]
