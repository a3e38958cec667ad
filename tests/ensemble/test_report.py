"""Report files: best.json keys, trials.csv columns and rows, techniques.csv credit, convergence.png."""

from __future__ import annotations

import csv
import json

from ensemble import Maximize, Result
from ensemble.driver.local import run_app
from ensemble.report import write_report
from ensemble.settings import RunSettings
from ensemble.storage import Storage
from tests.ensemble.driver_helpers import QuadApp, Scripted, db_url

A, B, C = {"x": 1, "y": 1}, {"x": 7, "y": 3}, {"x": 2, "y": 9}


def _run(tmp_path, app=None, script=(A, C, B, A)):
    out = tmp_path / "rep"
    res = run_app(app or QuadApp(), RunSettings(database=db_url(tmp_path), run_name="r", report_dir=str(out),
                                                quiet=True), technique=Scripted(list(script)))
    return res, out


def test_best_json(tmp_path):
    res, out = _run(tmp_path)
    best = json.loads((out / "best.json").read_text())
    assert set(best) >= {"config", "value", "metrics", "evaluations", "technique"}
    assert best["config"] == B and best["value"] == 1.0 and best["evaluations"] == 3
    assert best["technique"] == "Scripted" and best["metrics"]["time"] == 1.0
    assert res.report_dir == str(out)


def test_trials_csv_has_one_row_per_request(tmp_path):
    _run(tmp_path)
    rows = list(csv.DictReader((tmp_path / "rep" / "trials.csv").open()))
    assert [r["number"] for r in rows] == ["1", "2", "3", "4"]
    assert list(rows[0])[:5] == ["number", "state", "technique", "value", "cost"]
    assert {"x", "y"} <= set(rows[0])
    assert [(int(r["x"]), int(r["y"])) for r in rows] == [(1, 1), (2, 9), (7, 3), (1, 1)]
    assert [r["duplicate"] for r in rows] == ["0", "0", "0", "1"]
    assert float(rows[2]["value"]) == 1.0 and rows[3]["value"] == rows[0]["value"]


def test_techniques_csv_counts_and_credit(tmp_path):
    _run(tmp_path)
    rows = list(csv.DictReader((tmp_path / "rep" / "techniques.csv").open()))
    assert len(rows) == 1
    r = rows[0]
    assert (r["technique"], r["requests"], r["unique"], r["duplicates"], r["failures"]) == \
        ("Scripted", "4", "3", "1", "0")
    assert r["credit"] == "2"        # A (first) and B improved the best; C did not


def test_convergence_png_is_a_png(tmp_path):
    _run(tmp_path)
    data = (tmp_path / "rep" / "convergence.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 1000


def test_maximized_objective_reports_the_user_value(tmp_path):
    class Throughput(QuadApp):
        def objective(self):
            return Maximize("gbs")

        def run(self, config, limit):
            return Result(metrics={"gbs": float(config["x"] + config["y"])})

    res, out = _run(tmp_path, Throughput(), script=(A, C))
    best = json.loads((out / "best.json").read_text())
    assert best["config"] == C and best["value"] == 11.0 and res.best_value == 11.0
    rows = list(csv.DictReader((out / "trials.csv").open()))
    assert [float(r["value"]) for r in rows] == [2.0, 11.0]


def test_report_can_be_written_later_from_the_database(tmp_path):
    _run(tmp_path)
    st = Storage(db_url(tmp_path))
    paths = write_report(st, st.get_run("r").id, str(tmp_path / "later"))
    assert [p.rsplit("/", 1)[-1] for p in paths] == ["best.json", "trials.csv", "techniques.csv",
                                                      "convergence.png"]
    assert json.loads((tmp_path / "later" / "best.json").read_text())["config"] == B
