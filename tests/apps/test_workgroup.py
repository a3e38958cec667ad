"""apps.workgroup: kernel templates, features, the sweep as runs, the service, predict-wg, --seed-from-model."""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest

from apps.workgroup.data import load
from apps.workgroup.features import FEATURE_NAMES, KernelParseError, kernel_features
from apps.workgroup.kernels import (
    opencl_source,
    real_world_kernels,
    reference,
    synthetic_kernel,
    tile_bytes,
)
from apps.workgroup.predict import predict, shipped_predictor
from ensemble.cli import main as cli_main


def _opencl() -> bool:
    try:
        from measurement.opencl import opencl_available

        return bool(opencl_available())
    except Exception:  # noqa: BLE001 - any import or driver problem means no OpenCL here
        return False


needs_opencl = pytest.mark.skipif(not _opencl(), reason="no OpenCL platform")
warnings.filterwarnings("ignore", message=".*retrieved more than once.*")

#: features of a plain CPU device, for tests that need no OpenCL
CPU = {"max_compute_units": 4.0, "max_work_group_size": 4096.0, "local_mem_size": 524288.0,
       "global_mem_size": 8e9, "global_mem_cache_size": 3.3e7, "global_mem_cacheline_size": 64.0,
       "max_clock_frequency": 2400.0, "preferred_vector_width_float": 8.0, "max_work_item_sizes_0": 4096.0,
       "max_work_item_sizes_1": 4096.0, "is_gpu": 0.0}


def test_templates_have_the_papers_parts() -> None:
    k = synthetic_kernel(np.random.default_rng(0), 0, complex_=True, dtype="double")
    src = opencl_source(k)
    assert "local T* tile" in src and "barrier(CLK_LOCAL_MEM_FENCE)" in src and "user_function" in src
    assert f"#define BN {k.north}" in src and f"#define BW {k.west}" in src
    assert tile_bytes(k, 4, 8) == (4 + k.north + k.south) * (8 + k.west + k.east) * 8
    f = kernel_features(src)
    assert f["complexity"] == 1.0 and f["north"] == k.north
    assert abs(sum(v for n, v in f.items() if n.startswith("density_")) - 1.0) < 1e-9


def test_reference_of_gol_is_conways_rule() -> None:
    gol = next(k for k in real_world_kernels() if k.family == "gol")
    blinker = np.zeros((5, 5), np.int32)
    blinker[2, 1:4] = 1
    out = reference(gol, blinker)
    assert out[1:4, 2].tolist() == [1, 1, 1] and out[2].sum() == 1


@pytest.mark.parametrize("bad", ["", "int main() { return 0; }", "kernel void k( { ", opencl_source(
    real_world_kernels()[0]).replace("#define BN 1", "")])
def test_unparsable_kernel_gives_a_message_and_w_safe(bad: str) -> None:
    with pytest.raises(KernelParseError):
        kernel_features(bad)
    p = shipped_predictor("speedup")
    pred = predict(p, bad, CPU, 512, 512, "float", 4096)
    assert pred.used_w_safe and "W_safe" in pred.note and pred.size == p.base


def test_device_smaller_than_every_training_device_gives_w_safe() -> None:
    p = shipped_predictor("classifier", "J48", "nearest")
    small = dict(CPU, max_work_group_size=16.0)
    pred = predict(p, opencl_source(real_world_kernels()[0]), small, 512, 512, "float", 16)
    assert pred.used_w_safe and "below every training" in pred.note
    assert pred.size[0] * pred.size[1] <= 16


def test_shipped_extract_is_small_and_complete() -> None:
    from apps.workgroup.data import PACKAGED

    total = sum(f.stat().st_size for f in PACKAGED.glob("*.csv.gz"))
    assert total < 3 * 1024 * 1024
    d = load()
    assert len(d) >= 10 and d.features.shape == (len(d), len(FEATURE_NAMES))
    assert all(d.times) and np.isfinite(d.features).all()


def test_predict_wg_command(tmp_path, capsys) -> None:
    dev = tmp_path / "dev.json"
    dev.write_text(json.dumps(CPU))
    rc = cli_main(["predict-wg", "--kernel", "gaussian3.float", "--device-json", str(dev), "--rows", "512",
                   "--cols", "512", "--method", "classifier", "--model", "J48"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert out["wr"] * out["wc"] <= 4096 and out["note"] == ""


@pytest.mark.opencl
@needs_opencl
def test_feature_extractor_reads_a_real_pocl_device() -> None:
    from apps.workgroup.features import device_features
    from measurement.opencl import OpenCLBackend

    be = OpenCLBackend()
    f = device_features(be.device)
    assert f["max_work_group_size"] == be.max_work_group_size and f["local_mem_size"] > 0
    assert f["max_compute_units"] >= 1 and set(f) == set(CPU)


@pytest.mark.opencl
@needs_opencl
def test_sweep_is_an_ordinary_resumable_run_and_exports(tmp_path) -> None:
    from apps.workgroup.data import export_database
    from apps.workgroup.sweep import Scenario, sweep_scenario
    from ensemble.storage import Storage
    from measurement.opencl import OpenCLBackend

    be = OpenCLBackend()
    db = f"sqlite:///{tmp_path / 'wg.db'}"
    sc = Scenario(real_world_kernels()[0], 32, 32)
    name = sweep_scenario(sc, be, db, grid="pow2", repeats=1)
    with Storage(db) as st:
        run = st.get_run(name)
        trials = st.trials(run.id)
        assert trials and all(t.state == "OK" for t in trials)   # every launch matched the NumPy reference
        n = len(trials)
    assert sweep_scenario(sc, be, db, grid="pow2", repeats=1) == name   # resumes: nothing re-measured
    with Storage(db) as st:
        assert len(st.trials(st.get_run(name).id)) == n
    assert export_database(db, tmp_path / "x") == (1, n)
    d = load(tmp_path / "x")
    assert len(d.times[0]) == n and d.scenarios[0]["w_max"] >= 1


@pytest.mark.opencl
@needs_opencl
def test_client_asks_runs_and_reports_back(tmp_path) -> None:
    """A program asks the service for a size, launches with it on PoCL, reports the runtime; it is stored."""
    import sqlite3

    from apps.workgroup.features import device_features
    from apps.workgroup.service import (
        PredictionService,
        WorkgroupClient,
        export_training,
    )
    from apps.workgroup.sweep import Scenario, WorkgroupApp
    from measurement.opencl import OpenCLBackend

    be = OpenCLBackend()
    k = real_world_kernels()[3]   # heat equation
    app = WorkgroupApp(Scenario(k, 64, 64), be, repeats=1)
    with PredictionService(shipped_predictor("speedup"), tmp_path / "svc.db") as svc:
        assert svc.url.startswith("http://127.0.0.1:")
        client = WorkgroupClient(svc.url)
        answer = client.predict(app.source, device_features(be.device), 64, 64, "float", app.w_max)
        res = app.run({"wr": answer["wr"], "wc": answer["wc"]}, None)
        assert res.state == "OK"
        assert client.report(answer["id"], answer["wr"], answer["wc"], res.time) == {"stored": True}
        with pytest.raises(Exception, match="never given out"):
            client.report(answer["id"] + 99, 2, 2, 1.0)
    db = sqlite3.connect(tmp_path / "svc.db")
    assert db.execute("SELECT wr, wc FROM requests").fetchall() == [(answer["wr"], answer["wc"])]
    assert db.execute("SELECT runtime FROM reports").fetchall() == [(res.time,)]
    db.close()
    assert export_training(tmp_path / "svc.db", tmp_path / "train") == (1, 1)
    d = load(tmp_path / "train")
    assert d.times[0] == {(answer["wr"], answer["wc"]): pytest.approx(res.time)}


@pytest.mark.opencl
@needs_opencl
def test_seed_from_model_gives_a_valid_first_configuration() -> None:
    from apps.workgroup.seeded import SeededStencilApp

    app = SeededStencilApp(pattern="star", dims=2, radius=1, size=32, dtype="float32", seed_from_model="speedup",
                           backend="opencl")
    seeds = app.seed_configurations()
    assert app.space().is_valid(seeds[0]) and len(seeds) >= 1
    assert (seeds[0]["wgy"], seeds[0]["wgx"]) == app.prediction.size


@pytest.mark.opencl
@needs_opencl
def test_an_interrupted_sweep_resumes_without_measuring_again(tmp_path) -> None:
    from apps.workgroup.sweep import Scenario, WorkgroupApp, sweep_scenario
    from ensemble.storage import Storage
    from ensemble.tune import tune
    from measurement.opencl import OpenCLBackend

    be = OpenCLBackend()
    db = f"sqlite:///{tmp_path / 'wg.db'}"
    sc = Scenario(real_world_kernels()[3], 32, 32)
    app = WorkgroupApp(sc, be, grid="pow2", repeats=1)
    tune(app, database=db, run_name=sc.run_name(be.name), technique="Random", test_limit=3, seed=0)  # "killed"
    name = sweep_scenario(sc, be, db, grid="pow2", repeats=1)
    with Storage(db) as st:
        trials = [t for t in st.trials(st.get_run(name).id) if not t.duplicate]
    configs = [(t.config["wr"], t.config["wc"]) for t in trials]
    assert len(configs) == len(set(configs)) == app.space().count_valid()
