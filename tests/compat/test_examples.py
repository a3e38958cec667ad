"""OpenTuner's examples, reproduced as fixtures in apps/, run both ways.

"unchanged": ``ensemble-tuner opentuner APP.py [flags]`` (the import hook
maps ``opentuner``); "changed": the same file with only its imports changed
to ``ensemble.compat.opentuner``. Each run must finish, report its best
configuration, leave its run in our database and call save_final_config.
How good the best value is against OpenTuner 0.8.8 is measured by
scripts/bench_opentuner_compat.py (docs/OPENTUNER.md), not asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ensemble.storage import Storage
from tests.compat.helpers import ROOT, prepare, run_app

MODES = ["unchanged", "changed"]


def _db(work):
    return f"sqlite:///{work / 'ot.db'}"


def _only_run(work):
    st = Storage(_db(work))
    runs = st.list_runs()
    assert len(runs) == 1
    rows = [r for r in st.trials(runs[0].id) if not r.duplicate]
    return runs[0], rows


@pytest.mark.parametrize("mode", MODES)
def test_rosenbrock_integer_names(tmp_path, mode):
    work = prepare(tmp_path)
    proc = run_app("rosenbrock.py", ["--test-limit", "30", "--database", _db(work), "--seed", "1",
                                     "--dimensions", "3", "--quiet", "--report", "rep"], work, mode)
    assert proc.returncode == 0, proc.stderr
    assert "Final configuration {0: " in proc.stdout          # the app sees its integer names
    run, rows = _only_run(work)
    assert len(rows) == 30
    assert set(rows[0].config) == {"p_0", "p_1", "p_2"}       # stored under identifier names
    assert run.app.endswith("rosenbrock.py:Rosenbrock")
    assert {"best.json", "trials.csv"} <= {p.name for p in (work / "rep").iterdir()}   # reported like any app
    best = subprocess.run([sys.executable, "-m", "ensemble.cli", "best", "--database", _db(work)], cwd=work,
                          capture_output=True, text=True, check=False, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    assert best.returncode == 0 and json.loads(best.stdout)["value"] == min(r.value for r in rows)


@pytest.mark.parametrize("mode", MODES)
def test_tsp_permutation(tmp_path, mode):
    work = prepare(tmp_path)
    proc = run_app("tsp.py", ["cities10.txt", "--test-limit", "25", "--database", _db(work), "--seed", "2",
                              "--quiet"], work, mode)
    assert proc.returncode == 0, proc.stderr
    run, rows = _only_run(work)
    assert len(rows) == 25
    assert all(sorted(r.config["p_0"]) == list(range(10)) for r in rows)
    # no --technique: OpenTuner's default ensemble (AUCBanditMetaTechniqueA) from our techniques
    assert json.loads(run.settings_json)["technique"] == "OpenTunerA"
    assert {r.technique for r in rows} <= {"DifferentialEvolution", "GreedyMutation", "NormalGreedyMutation",
                                           "NelderMead"}
    best = json.loads(proc.stdout.split(": ", 1)[1].splitlines()[0])
    assert sorted(best["0"]) == list(range(10))


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_mmm_tuner_saves_final_config(tmp_path, mode):
    work = prepare(tmp_path)
    proc = run_app("mmm_tuner.py", ["--test-limit", "4", "--database", _db(work), "--quiet"], work, mode)
    assert proc.returncode == 0, proc.stderr
    saved = json.loads((work / "mmm_final_config.json").read_text())
    _, rows = _only_run(work)
    best = min((r for r in rows if r.state == "OK"), key=lambda r: r.value)
    assert saved == {"BLOCK_SIZE": best.config["BLOCK_SIZE"]}


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("parallel", [False, True])
def test_gccflags_minimal_compile_then_run(tmp_path, mode, parallel):
    work = prepare(tmp_path)
    extra = ["--parallel-compile", "--parallelism", "2"] if parallel else []
    proc = run_app("gccflags_minimal.py", ["--test-limit", "4", "--database", _db(work), "--quiet", *extra],
                   work, mode)
    assert proc.returncode == 0, proc.stderr
    _, rows = _only_run(work)
    assert len(rows) == 4 and all(r.state == "OK" for r in rows)
    assert "unroll_loops" in rows[0].config or "p_unroll_loops" in rows[0].config
    assert not list(work.glob("tmp*.bin"))                    # run_precompiled removed its binaries


@pytest.mark.slow
@pytest.mark.parametrize("mode", MODES)
def test_gccflags_full_style(tmp_path, mode):
    work = prepare(tmp_path)
    proc = run_app("gccflags.py", ["kernel.cpp", "--test-limit", "4", "--database", _db(work), "--quiet"],
                   work, mode)
    assert proc.returncode == 0, proc.stderr
    saved = json.loads((work / "gccflags_final_config.json").read_text())
    assert saved["-O"] in (0, 1, 2, 3)                        # a name that is no identifier
    assert "no-such-flag-here" not in saved                   # found not to work at start-up
    assert (work / "gccflags_final_config.cmd").read_text().startswith("g++ kernel.cpp")


@pytest.mark.parametrize("mode", MODES)
def test_py_api_example(tmp_path, mode):
    work = prepare(tmp_path)
    proc = run_app("api_example.py", ["--database", _db(work), "--seed", "4"], work, mode)
    assert proc.returncode == 0, proc.stderr
    assert "best x found was" in proc.stdout
    run, rows = _only_run(work)
    assert 30 <= len(rows) <= 60                              # 60 asks; None ends the loop early
    assert json.loads(run.settings_json)["technique"] == "OpenTunerA"   # OpenTuner's default ensemble


@pytest.mark.parametrize("mode", MODES)
def test_py_api_multiple_tuning_runs(tmp_path, mode):
    work = prepare(tmp_path)
    proc = run_app("multiple_tuning_runs.py", ["--seed", "5"], work, mode)
    assert proc.returncode == 0, proc.stderr
    assert "best x configs: [{'x': " in proc.stdout
    for name in ("a.db", "b.db", "c.db"):
        st = Storage(f"sqlite:///{work / name}")
        (run,) = st.list_runs()
        assert len([r for r in st.trials(run.id) if not r.duplicate]) == 40


@pytest.mark.parametrize("mode", MODES)
def test_py_api_custom_metric(tmp_path, mode):
    work = prepare(tmp_path)
    proc = run_app("custom_metric_example.py", ["--test-limit", "8", "--database", _db(work), "--quiet"],
                   work, mode)
    assert proc.returncode == 0, proc.stderr
    run, rows = _only_run(work)
    assert json.loads(run.objective_json) == {"type": "Maximize", "metric": "qps"}
    best = max(rows, key=lambda r: r.metrics["qps"])
    assert f"best threads: {best.config['threads']}" in proc.stdout


@pytest.mark.parametrize("mode", MODES)
def test_registered_sequential_technique(tmp_path, mode):
    work = prepare(tmp_path)
    proc = run_app("custom_technique.py", ["--technique", "CoordinateStep", "--test-limit", "40",
                                           "--database", _db(work), "--seed", "6", "--quiet"], work, mode)
    assert proc.returncode == 0, proc.stderr
    _, rows = _only_run(work)
    assert {r.technique for r in rows} == {"CoordinateStep"}
    assert min(r.value for r in rows) < 0.05                  # the pattern moves towards (1, -0.5)
