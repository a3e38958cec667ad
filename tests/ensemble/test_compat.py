"""OpenTuner compatibility: a typical OpenTuner app runs with only its imports changed."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from ensemble.compat.opentuner import (
    ConfigurationManipulator,
    FloatParameter,
    LogIntegerParameter,
    PermutationParameter,
    Result,
    SwitchParameter,
)
from ensemble.storage import Storage
from tests.ensemble.driver_helpers import db_url

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EXAMPLE = os.path.join(ROOT, "tests", "ensemble", "opentuner_example.py")


def test_opentuner_style_app_runs_unchanged(tmp_path):
    out = tmp_path / "final.json"
    proc = subprocess.run(
        [sys.executable, EXAMPLE, "--test-limit", "25", "--database", db_url(tmp_path), "--run-name", "ot",
         "--technique", "tests.ensemble.driver_helpers:TinyRandom", "--seed", "3", "--output", str(out)],
        cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert "best configuration" in proc.stdout
    final = json.loads(out.read_text())
    assert set(final) == {"unroll", "block", "opt", "fast_math", "schedule"}
    st = Storage(db_url(tmp_path))
    run = st.get_run("ot")
    rows = [r for r in st.trials(run.id) if not r.duplicate]
    assert len(rows) == 25
    best = min((r for r in rows if r.state == "OK"), key=lambda r: r.value)
    assert best.config == final                         # save_final_config got the best one
    assert all(r.state == "FAILED" for r in rows if r.config["unroll"] == 13)
    assert run.app.endswith("opentuner_example.py:ToyTuner")


def test_manipulator_becomes_a_space():
    m = ConfigurationManipulator()
    m.add_parameter(FloatParameter("f", 0.5, 2.0))
    m.add_parameter(LogIntegerParameter("n", 1, 1024))
    m.add_parameter(SwitchParameter("s", 4))
    m.add_parameter(PermutationParameter("p", ["a", "b", "c"]))
    space = m.to_space()
    assert space.names == ["f", "n", "s", "p"]
    assert space.is_valid({"f": 1.0, "n": 10, "s": 3, "p": ["c", "a", "b"]})
    assert not space.is_valid({"f": 1.0, "n": 10, "s": 4, "p": ["c", "a", "b"]})


def test_result_conversion():
    assert Result(time=2.0).to_ensemble().time == 2.0
    assert Result(state="ERROR").to_ensemble().state == "FAILED"
    assert Result(state="TIMEOUT").to_ensemble().state == "TIMEOUT"
    assert Result(time=1.0, accuracy=0.9).to_ensemble().metrics == {"accuracy": 0.9}
