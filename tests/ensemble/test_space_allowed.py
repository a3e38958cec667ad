"""restrict_to(): spaces whose valid set is a list of recorded configurations."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from ensemble import ConfigurationError, Enum, Integer, SearchSpace, SpaceError

CACHE = Path("/work/shared/data/spaces/convolution_A100.json.gz")
_alt = Path(__file__).resolve().parents[3] / "shared" / "data" / "spaces" / CACHE.name
if _alt.exists():
    CACHE = _alt


def small_space():
    return SearchSpace(Integer("a", 0, 9), Integer("b", 0, 9), Enum("m", ["x", "y"]))


def test_count_sample_repair_and_extra_constraints():
    allowed = [
        {"a": a, "b": b} for a in range(10) for b in range(10) if (a * b) % 7 == 1
    ]
    s = small_space().restrict_to(allowed, name="recorded").require("a <= b")
    expected = sum(1 for r in allowed if r["a"] <= r["b"]) * 2
    assert s.count_valid() == expected
    rng = np.random.default_rng(0)
    for c in s.sample(rng, 50):
        assert {"a": c["a"], "b": c["b"]} in allowed and c["a"] <= c["b"]
    fixed = s.repair({"a": 9, "b": 0, "m": "y"}, rng)
    assert s.is_valid(fixed) and fixed["m"] == "y"
    assert not s.is_valid({"a": 0, "b": 0, "m": "x"})
    assert "recorded" in s.violated({"a": 0, "b": 0, "m": "x"})


def test_json_round_trip_keeps_the_table():
    s = small_space().restrict_to(
        [{"a": 1, "b": 2}, {"a": 3, "b": 3}, {"a": 1, "b": 2}]
    )
    t = SearchSpace.from_json(json.loads(json.dumps(s.to_json())))
    assert t.space_hash() == s.space_hash()
    assert t.count_valid() == s.count_valid() == 2 * 2  # duplicates collapse


def test_bad_input_is_named():
    with pytest.raises(SpaceError, match="unknown parameter"):
        small_space().restrict_to([{"zz": 1}])
    with pytest.raises(ConfigurationError, match="#1"):
        small_space().restrict_to([{"a": 1}, {"a": 99}])
    with pytest.raises(SpaceError, match="no configurations"):
        small_space().restrict_to([])


def test_huge_grid_is_seeded_not_enumerated():
    s = SearchSpace(*(Integer(f"x{i}", 0, 99) for i in range(6)))  # 1e12 grid
    rng = np.random.default_rng(1)
    rows = [
        dict(zip(s.names, map(int, r))) for r in rng.integers(0, 100, size=(500, 6))
    ]
    s.restrict_to(rows)
    assert s.count_valid() == len({tuple(r.values()) for r in rows})
    got = {tuple(c.values()) for c in s.sample(rng, 2000)}
    assert (
        got <= {tuple(r.values()) for r in rows} and len(got) > 400
    )  # uniform over 500


@pytest.mark.skipif(not CACHE.exists(), reason="shared data not present")
def test_recorded_kernel_tuner_cache_as_a_space():
    with gzip.open(CACHE) as fh:
        data = json.loads(fh.read())
    keys = data["tune_params_keys"]
    s = SearchSpace(*(Enum(k, data["tune_params"][k]) for k in keys))
    s.restrict_to({k: rec[k] for k in keys} for rec in data["cache"].values())
    assert s.count_valid() == len(data["cache"]) == 4362
    rng = np.random.default_rng(0)
    assert all(s.is_valid(c) for c in s.sample(rng, 100))
    assert s.is_valid(s.repair(s.from_unit(rng.random(s.dims)), rng))
