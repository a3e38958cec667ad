"""Loaders of recorded spaces: parameters inferred, failures kept, cost read."""

from __future__ import annotations

import math

import pytest

from apps.replay import detect_format, load_space
from tests.apps._replay_fixtures import csv_table, kt_cache, t4


def test_kernel_tuner_cache_gz(tmp_path):
    s = load_space(kt_cache(tmp_path / "c.json.gz"))
    assert s.names == ["block_size_x", "tile_y"]
    assert s.values == {"block_size_x": [32, 64], "tile_y": [1, 2, 4]}
    assert s.default_mode == "file"
    assert s.counts() == {"recorded": 5, "valid": 4, "failed": 1, "grid": 6}
    rec = s.lookup({"block_size_x": 64, "tile_y": 2})
    assert rec.value == 0.5 and not rec.failed
    assert rec.cost == pytest.approx(1.1)  # (1000 + 10 + 90) ms
    bad = s.lookup({"block_size_x": 32, "tile_y": 4})
    assert bad.failed and bad.reason == "RuntimeFailedConfig" and bad.cost == pytest.approx(1.1)
    assert s.optimum() == ({"block_size_x": 64, "tile_y": 2}, 0.5)


def test_plain_json_cache_detected(tmp_path):
    path = kt_cache(tmp_path / "c.json", gz=False)
    assert detect_format(path) == "kt-cache"
    assert load_space(path).size("file") == 5


def test_t4(tmp_path):
    path = t4(tmp_path / "t4.json")
    assert detect_format(path) == "t4"
    s = load_space(path)
    assert s.values == {"a": [1, 2], "b": ["x", "y"]}
    assert s.lookup({"a": 2, "b": "y"}).value == 3.0
    failed = s.lookup({"a": 1, "b": "y"})
    assert failed.failed and failed.reason == "compile" and failed.cost == pytest.approx(0.6)
    assert s.lookup({"a": 1, "b": "x"}).times == (5.0, 5.0)


def test_csv_numeric_sorted_last_column_default(tmp_path):
    s = load_space(csv_table(tmp_path / "t.csv"))
    assert detect_format(tmp_path / "t.csv") == "csv"
    assert s.objective == "gflops" and s.default_mode == "grid"
    # every non-objective column is a parameter unless a cost column is named
    assert s.names == ["x", "mode", "cost_s"]
    s = load_space(tmp_path / "t.csv", cost="cost_s", maximize=True)
    assert s.names == ["x", "mode"]
    assert s.values == {"x": [1.5, 2, 10], "mode": ["a", "b"]}
    assert s.lookup({"x": 10, "mode": "a"}).cost == 2.0
    empty = s.lookup({"x": 2, "mode": "b"})
    assert empty.failed and empty.cost == 1.0
    assert s.scalar(s.lookup({"x": 10, "mode": "a"})) == -100.0  # maximised: negated for minimisers
    assert s.optimum()[0] == {"x": 10, "mode": "a"}


def test_csv_objective_column_choice_and_errors(tmp_path):
    path = csv_table(tmp_path / "t.csv")
    s = load_space(path, objective="cost_s")
    assert s.names == ["x", "mode", "gflops"]
    with pytest.raises(ValueError, match="--objective 'nope'"):
        load_space(path, objective="nope")


def test_grid_mode_counts_absent_points(tmp_path):
    s = load_space(kt_cache(tmp_path / "c.json.gz"))
    grid = s.scalars("grid")
    assert grid.size == 6
    assert sum(math.isinf(v) for v in grid) == 2  # the failed one and the absent one
    absent = s.evaluate({"block_size_x": 64, "tile_y": 4})
    assert absent.failed and absent.cost == 0.0 and "absent" in absent.reason
