"""The replay app: file values come back unchanged, failures are charged, JSON output."""

from __future__ import annotations

import argparse
import json

import pytest

from apps.replay.app import ReplayApp, main
from tests.apps._replay_fixtures import csv_table, kt_cache, shared_space


def _random_name() -> str:
    """The registry's Random; its module path while the registry entry is being fixed."""
    from ensemble import registry

    try:
        registry.create_technique("Random", seed=0)
        return "Random"
    except Exception:  # noqa: BLE001 - any failure: use the module path
        return "techniques.random_search:Random"


RANDOM = _random_name()
SHARED_PNPOLY = shared_space("pnpoly_RTX2080Ti.json.gz")


def make_app(path, **kw) -> ReplayApp:
    ns = argparse.Namespace(file=str(path), space=kw.get("space"), objective=kw.get("objective"),
                            maximize=kw.get("maximize", False), cost_column=kw.get("cost_column"),
                            noise=kw.get("noise", False), seed=kw.get("seed", 1))
    return ReplayApp(ns)


def test_run_returns_the_file_values_for_every_configuration(tmp_path):
    app = make_app(kt_cache(tmp_path / "c.json.gz"))
    rec = app.recorded
    for key, record in rec.records.items():
        result = app.run(rec.config(key), None)
        assert result.cost == pytest.approx(record.cost)
        if record.failed:
            assert result.state == "FAILED" and result.reason == record.reason
        else:
            assert result.state == "OK" and result.time == record.value


def test_shared_space_values_equal_the_file():
    import gzip

    if SHARED_PNPOLY is None:
        pytest.skip("shared/data/spaces not present beside the checkout")
    with gzip.open(SHARED_PNPOLY) as fh:
        raw = json.loads(fh.read())
    app = make_app(SHARED_PNPOLY)
    for entry in list(raw["cache"].values())[::97]:
        config = {k: entry[k] for k in raw["tune_params_keys"]}
        result = app.run(config, None)
        if isinstance(entry["time"], str):
            assert result.state == "FAILED" and result.reason == entry["time"]
        else:
            assert result.time == entry["time"]
        assert result.cost == pytest.approx(
            (entry["compile_time"] + entry["verification_time"] + entry["benchmark_time"]) / 1000)


def test_file_mode_space_is_the_recorded_set_grid_mode_the_product(tmp_path):
    path = kt_cache(tmp_path / "c.json.gz")
    file_space = make_app(path).space()
    assert file_space.is_valid({"block_size_x": 32, "tile_y": 4})       # recorded, failed: in the space
    assert not file_space.is_valid({"block_size_x": 64, "tile_y": 4})   # absent: not in the space
    grid_app = make_app(path, space="grid")
    assert grid_app.space().is_valid({"block_size_x": 64, "tile_y": 4})
    absent = grid_app.run({"block_size_x": 64, "tile_y": 4}, None)
    assert absent.state == "FAILED" and absent.cost == 0.0 and "absent" in absent.reason


def test_csv_defaults_to_grid_and_maximize(tmp_path):
    app = make_app(csv_table(tmp_path / "t.csv"), cost_column="cost_s", maximize=True)
    assert app.mode == "grid"
    assert app.objective().scalar(app.run({"x": 10, "mode": "a"}, None)) == -100.0
    absent = app.run({"x": 10, "mode": "b"}, None)
    assert absent.state == "FAILED"


def test_noise_samples_recorded_repeats(tmp_path):
    app = make_app(kt_cache(tmp_path / "c.json.gz"), noise=True, seed=5)
    seen = {app.run({"block_size_x": 32, "tile_y": 1}, None).time for _ in range(40)}
    assert seen <= {2.0 * 0.9, 2.0, 2.0 * 1.1} and len(seen) > 1


def _cli(tmp_path, path, *extra):
    out = tmp_path / "out.json"
    rc = main([str(path), "--technique", RANDOM, "--seed", "3", "--quiet",
               "--database", f"sqlite:///{tmp_path / 'r.db'}", "--json-out", str(out), *extra])
    assert rc == 0
    return json.loads(out.read_text())


def test_cli_exhaustive_run_json_and_charged_failures(tmp_path):
    path = kt_cache(tmp_path / "c.json.gz")
    data = _cli(tmp_path, path, "--test-limit", "5", "--report", str(tmp_path / "rep"))
    assert set(data) >= {"best_value", "best_config", "evaluations", "trace"}
    assert data["evaluations"] == 5
    assert data["best_value"] == 0.5 and data["best_config"] == {"block_size_x": 64, "tile_y": 2}
    evals = [e for e, _ in data["trace"]]
    bests = [b for _, b in data["trace"]]
    assert evals == sorted(evals) and bests == sorted(bests, reverse=True) and bests[-1] == 0.5
    # every recorded configuration measured once, failed one included: 5 x 1.1 s
    assert data["simulated_seconds"] == pytest.approx(5 * 1.1)
    from ensemble.storage import Storage

    storage = Storage(f"sqlite:///{tmp_path / 'r.db'}")
    run = storage.list_runs()[0]
    rows = storage.trials(run.id)
    states = sorted(r.state for r in rows)
    assert states.count("FAILED") == 1 and states.count("OK") == 4
    costs = [r.cost for r in rows]
    assert all(c == pytest.approx(1.1) for c in costs)
    assert (tmp_path / "rep" / "trials.csv").exists()


def test_cli_stop_after_is_simulated_seconds(tmp_path):
    path = kt_cache(tmp_path / "c.json.gz")
    data = _cli(tmp_path, path, "--stop-after", "2.0")
    # each evaluation costs 1.1 simulated seconds: the clock passes 2.0 after the second
    assert data["evaluations"] == 2
    assert data["simulated_seconds"] == pytest.approx(2.2)


def test_cli_grid_mode_csv(tmp_path):
    path = csv_table(tmp_path / "t.csv")
    data = _cli(tmp_path, path, "--cost-column", "cost_s", "--maximize", "--test-limit", "6")
    assert data["evaluations"] == 6 and data["space_mode"] == "grid"
    assert data["best_value"] == 100.0 and data["best_config"] == {"x": 10, "mode": "a"}
