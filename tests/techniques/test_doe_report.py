"""DLMT's report files reach the run's report directory through ensemble.report (run_state "technique")."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ensemble.report import REPORT_FILES, write_report
from ensemble.space import Integer, SearchSpace
from ensemble.storage import Storage
from techniques.doe import DLMT
from techniques.doe.report import write_report as write_dlmt
from tests.techniques.driven import run_technique


def _dlmt_state() -> dict:
    s = SearchSpace().add(Integer("a", 0, 8), Integer("b", 0, 8), Integer("c", 0, 8))
    tech = DLMT(steps=2)
    run_technique(tech, s, lambda c: (c["a"] - 3) ** 2 + 0.5 * c["b"], budget=40, seed=0)
    return tech.state_dict()


def test_report_writer_writes_the_technique_files(tmp_path: Path) -> None:
    state = _dlmt_state()
    with Storage(f"sqlite:///{tmp_path / 'r.db'}") as storage:
        run_id = storage.create_run("r", app="x:Y", space_json={}, space_hash="h", objective_json={},
                                    settings_json={})
        storage.put_state(run_id, "technique", state)
        paths = write_report(storage, run_id, str(tmp_path / "report"))
    names = sorted(Path(p).name for p in paths)
    assert set(REPORT_FILES) <= set(names)
    assert "dlmt.md" in names and "dlmt_step1.svg" in names
    text = (tmp_path / "report" / "dlmt.md").read_text()
    assert "## Step 1" in text and "ANOVA" in text


def test_report_writer_refuses_paths_outside_the_directory(tmp_path: Path) -> None:
    with Storage(f"sqlite:///{tmp_path / 'r.db'}") as storage:
        run_id = storage.create_run("r", app="x:Y", space_json={}, space_hash="h", objective_json={},
                                    settings_json={})
        storage.put_state(run_id, "technique", {"report_files": {"../evil.md": "x", "best.json": "x", "ok.md": "y"}})
        paths = write_report(storage, run_id, str(tmp_path / "report"))
    assert not (tmp_path / "evil.md").exists()
    assert (tmp_path / "report" / "ok.md").read_text() == "y"
    assert (tmp_path / "report" / "best.json").read_text() != "x"
    assert len(paths) == len(REPORT_FILES) + 1


def test_write_report_for_script_users(tmp_path: Path) -> None:
    s = SearchSpace().add(Integer("a", 0, 8), Integer("b", 0, 8))
    tech = DLMT()
    tech.bind(s, budget=30, rng=np.random.default_rng(0))
    run_technique(tech, s, lambda c: abs(c["a"] - 2) + (math.inf if c["b"] == 7 else c["b"]), budget=30, seed=0)
    paths = write_dlmt(tech, tmp_path)
    assert any(p.endswith("dlmt.md") for p in paths)


def _bowl(c: dict) -> float:
    return float((c["a"] - 3) ** 2 + 0.5 * c["b"] + 1)


def test_dlmt_md_reaches_the_run_report_through_the_driver(tmp_path: Path) -> None:
    """--report and `ensemble-tuner report` show dlmt.md: the search driver stores the technique's state."""
    import ensemble
    from ensemble import cli

    space = SearchSpace().add(Integer("a", 0, 8), Integer("b", 0, 8), Integer("c", 0, 8))
    db = f"sqlite:///{tmp_path / 'd.db'}"
    ensemble.tune(_bowl, space, technique="dlmt", test_limit=40, seed=0, database=db, run_name="d",
                  report_dir=str(tmp_path / "rep"))
    assert "## Step 1" in (tmp_path / "rep" / "dlmt.md").read_text()
    assert cli.main(["report", "--database", db, "--run-name", "d", "--out", str(tmp_path / "again")]) == 0
    assert (tmp_path / "again" / "dlmt.md").exists()


def test_dlmt_as_a_bandit_arm_still_reports(tmp_path: Path) -> None:
    from ensemble.driver import RunSession
    from ensemble.settings import RunSettings
    from techniques.bandit import AUCBandit
    from tests.techniques.driven import _FunctionApp

    space = SearchSpace().add(Integer("a", 0, 8), Integer("b", 0, 8), Integer("c", 0, 8))
    bandit = AUCBandit(seed=0, arms=[DLMT(steps=1), "Random"], c=1.0)
    settings = RunSettings(database=f"sqlite:///{tmp_path / 'b.db'}", test_limit=40, seed=0, quiet=True,
                           report_dir=str(tmp_path / "rep"))
    RunSession(_FunctionApp(space, _bowl), settings, app_ref="tests:bowl", technique=bandit).run()
    assert (tmp_path / "rep" / "dlmt.md").exists()
