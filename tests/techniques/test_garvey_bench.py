"""scripts/bench_garvey.py: capped strategy runs and Table 3's rows (the '+ RF' rows, cut-short runs)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from scripts.bench_garvey import LOADINGS, Cache, main, run_strategy
from techniques.garvey import Garvey, GarveyRand
from techniques.garvey.predictor import LoadingPredictor
from tests.techniques.test_garvey_heuristics import hints, objective, space_2d


class FakeCache(Cache):
    """The shared cache without a device: values from the test objective, one compile second each."""

    def __init__(self, space: Any) -> None:
        super().__init__(runner=None, space=space, threads=1)

    def measure(self, configs: list[dict[str, Any]]) -> None:
        for c in configs:
            h = self.space.config_hash(c)
            if h not in self.rec:
                v = objective(c)
                self.rec[h] = {"value": v, "state": "OK", "reason": "", "compile_s": 1.0, "run_s": 0.01,
                               "compiled": True}


def test_a_capped_heuristic_stops_at_the_cap_and_says_so() -> None:
    cache = FakeCache(space_2d())
    capped = run_strategy(Garvey(heuristic="hybrid", loading="global", hints=hints()), cache, 12, seed=0)
    assert capped["configs"] == 12 and capped["truncated"] and not capped["deadline"]
    full = run_strategy(Garvey(heuristic="hybrid", loading="global", hints=hints()), cache, None, seed=0)
    assert not full["truncated"] and full["configs"] > 12 and full["best"] <= capped["best"]
    rand = run_strategy(GarveyRand(samples=20), cache, None, seed=0)
    assert rand["configs"] == 20 and rand["compile_s"] == 20.0 and not rand["truncated"]


def _result(name: str, features: dict[str, Any], rand: float, hybrid: dict[str, float],
            default_cut: bool = False) -> dict[str, Any]:
    run = {"configs": 10, "compiled": 10, "compile_s": 5.0, "run_s": 0.1, "deadline": False}
    s = {"Rand": {**run, "best": rand, "configs": 100}}
    for ld in LOADINGS:
        s[f"hybrid:{ld}"] = {**run, "best": hybrid[ld]}
    s["default"] = {**run, "best": rand, "deadline": default_cut}
    return {"benchmark": name, "features": features, "size": 64, "device": "fake", "strategies": s}


def test_table_takes_rf_from_a_model_file_without_the_kernels_own_row(tmp_path: Path) -> None:
    f1 = {"size": 11, "dims": 1, "density": 1.0, "unique": "z"}
    f2 = {"size": 9, "dims": 2, "density": 0.36, "unique": "x"}
    res = [_result("a", f1, 2.0, {"global": 1.0, "vec": 4.0, "local": 0.5, "image": 3.0}),
           _result("b", f2, 2.0, {"global": 1.0, "vec": 4.0, "local": 2.0, "image": 3.0}, default_cut=True)]
    rp = tmp_path / "r.json"
    rp.write_text(json.dumps(res))
    # the model knows "a" (local) and "b" (image); leaving each kernel's own row out, each is predicted
    # with the other's label
    model = tmp_path / "m.json"
    LoadingPredictor.save(model, [{"name": "a", "features": f1, "times": {"hybrid": {"local": 1.0, "global": 2.0}}},
                                  {"name": "b", "features": f2, "times": {"hybrid": {"image": 1.0, "global": 2.0}}}],
                          platform="fake")
    out = tmp_path / "t.json"
    assert main(["table", str(rp), "--model", str(model), "--out", str(out)]) == 0
    rows = {r["approach"]: r for r in json.loads(out.read_text())["rows"]}
    rf = rows["hybrid + RF"]
    assert rf["loadings"] == ["image", "local"]
    assert rf["speedups"] == [2.0 / 3.0, 2.0 / 2.0]
    assert math.isclose(rows["Oracle hybrid"]["speedup_vs_rand"], math.sqrt(4.0 * 2.0))
    assert rows["Oracle hybrid"]["configs"] == 40
    assert "default" not in rows  # cut short by the deadline on one kernel: not a row


@pytest.mark.opencl
@pytest.mark.slow
def test_measure_with_build_processes_on_opencl(tmp_path: Path) -> None:
    """The worker-process path (``--build-procs``): builds and times in spawned workers, rows come back."""
    from measurement.opencl import opencl_available

    if not opencl_available():
        pytest.skip("no OpenCL platform")
    out = tmp_path / "r.json"
    assert main(["measure", "--size", "8", "--names", "star2d_r1_y", "--strategies", "Rand,hybrid",
                 "--loadings", "global", "--rand-samples", "3", "--cap", "3", "--repeats", "0",
                 "--build-procs", "2", "--out", str(out)]) == 0
    (r,) = json.loads(out.read_text())
    assert r["strategies"]["Rand"]["configs"] == 3 and r["strategies"]["hybrid:global"]["configs"] == 3
    assert math.isfinite(r["strategies"]["Rand"]["best"]) and r["compiled"] >= 3
