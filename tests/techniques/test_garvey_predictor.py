"""The random-forest loading predictor: leave-one-out on measured data, and the model file."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ensemble.errors import ConfigurationError
from techniques.garvey.predictor import (
    LoadingPredictor,
    best_loading,
    default_model_path,
    leave_one_out,
)

ROOT = Path(__file__).resolve().parents[2]
FIXTURE = Path(__file__).parent / "data" / "garvey_pocl_fixture.json"


def fixture_rows() -> list[dict]:
    return json.loads(FIXTURE.read_text())["rows"]


def test_leave_one_out_on_the_measured_fixture() -> None:
    rows = fixture_rows()
    assert len(rows) >= 4
    res = leave_one_out(rows, "fixture")
    assert res["kernels"] == len(rows) and len(res["predictions"]) == len(rows)
    # the loop: each kernel predicted by a model that never saw it, scored against its own measurements
    for r, p in zip(rows, res["predictions"]):
        times = r["times"]["fixture"]
        assert p["best"] == best_loading(times)
        assert p["ratio"] == pytest.approx(times[p["best"]] / times[p["predicted"]])
    hits = sum(p["predicted"] == p["best"] for p in res["predictions"])
    assert res["absolute_accuracy"] == pytest.approx(hits / len(rows))
    assert 0.0 < res["penalty_weighted_accuracy"] <= 1.0


def test_leave_one_out_scores_a_wrong_prediction_by_its_loss() -> None:
    # four kernels: small stencils prefer image, large ones local; the held-out one is mispredicted
    f = [{"size": s, "dims": 2, "density": 1.0, "unique": "z"} for s in (5, 9, 25, 49)]
    times = [{"image": 1.0, "local": 2.0}, {"image": 1.0, "local": 2.0}, {"image": 3.0, "local": 1.0},
             {"image": 3.0, "local": 1.5}]
    rows = [{"name": str(i), "features": f[i], "times": {"h": times[i]}} for i in range(4)]
    res = leave_one_out(rows, "h")
    for r, p in zip(rows, res["predictions"]):
        t = r["times"]["h"]
        assert p["ratio"] == pytest.approx(min(t.values()) / t[p["predicted"]])


def test_model_file_round_trip_and_fresh_process(tmp_path: Path) -> None:
    path = tmp_path / "model.json"
    LoadingPredictor.save(path, fixture_rows(), platform="PoCL fixture")
    here = [LoadingPredictor.load(path, "fixture").predict(r["features"]) for r in fixture_rows()]
    code = ("import json, sys; from techniques.garvey.predictor import LoadingPredictor as P; "
            f"rows = json.load(open({str(FIXTURE)!r}))['rows']; "
            f"print(json.dumps([P.load({str(path)!r}, 'fixture').predict(r['features']) for r in rows]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=str(ROOT))
    assert json.loads(out.stdout) == here


def test_shipped_model_loads_for_every_heuristic() -> None:
    doc = json.loads(default_model_path().read_text())
    assert doc["rows"] and "NVIDIA" in doc["platform"]  # the default is trained on the GPU machine
    for h in ("dims", "opts", "hybrid"):  # one model per heuristic (Sec. 6.3): every row has all three
        assert all(h in r["times"] and len(r["times"][h]) == 4 for r in doc["rows"])
        p = LoadingPredictor.load(None, h)
        assert p.predict({"size": 7, "dims": 3, "density": 7 / 27, "unique": "none"}) in (
            "global", "vec", "local", "image")


def test_the_pocl_model_is_shipped_and_labelled() -> None:
    path = default_model_path().with_name("loading_model_pocl.json")
    doc = json.loads(path.read_text())
    assert "PoCL" in doc["platform"]
    assert LoadingPredictor.load(path, "hybrid").predict({"size": 5, "dims": 2, "density": 5 / 9,
                                                          "unique": "x"}) in ("global", "vec", "local", "image")


def test_bad_inputs_are_named() -> None:
    with pytest.raises(ConfigurationError, match="lack 'density'"):
        LoadingPredictor().fit([{"features": {"size": 1, "dims": 1}, "times": {"h": {"global": 1.0}}}], "h")
    with pytest.raises(ConfigurationError, match="no row has a measured time"):
        LoadingPredictor().fit(fixture_rows(), "hybrid-typo")
    with pytest.raises(ConfigurationError, match="does not exist"):
        LoadingPredictor.load("/nonexistent/model.json", "hybrid")


def test_the_shipped_model_predicts_the_same_in_a_fresh_process() -> None:
    f = {"size": 13, "dims": 3, "density": 0.104, "unique": "none"}
    here = {h: LoadingPredictor.load(None, h).predict(f) for h in ("dims", "opts", "hybrid")}
    code = ("import json; from techniques.garvey.predictor import LoadingPredictor as P; "
            f"print(json.dumps({{h: P.load(None, h).predict({f!r}) for h in ('dims', 'opts', 'hybrid')}}))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=str(ROOT))
    assert json.loads(out.stdout) == here
