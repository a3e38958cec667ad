"""csTuner grouping: pairwise CVs and the deque algorithm on a function with known interactions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from techniques.cstuner.grouping import (
    deque_grouping,
    group_parameters,
    interaction_cvs,
    pair_cv,
    value_scale,
)

DOMAINS = {
    "a": list(range(1, 9)),
    "b": list(range(1, 9)),
    "c": list(range(8)),
    "d": list(range(-4, 5)),
    "e": list(range(-4, 5)),
}


def f(cfg: dict) -> float:
    return (cfg["a"] * cfg["b"] - 16) ** 2 + (cfg["c"] - 3) ** 2 + (cfg["d"] + cfg["e"]) ** 2


def _best_random(seed: int, n: int = 20) -> dict:
    rng = np.random.default_rng(seed)
    samples = [{k: v[rng.integers(len(v))] for k, v in DOMAINS.items()} for _ in range(n)]
    return min(samples, key=f)


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_deque_groups_ab_and_de_and_leaves_c_alone(seed: int) -> None:
    groups, cvs, evaluations = group_parameters(DOMAINS, f, _best_random(seed))
    as_sets = sorted(sorted(g) for g in groups)
    assert as_sets == [["a", "b"], ["c"], ["d", "e"]]
    assert cvs[("a", "c")] == 0.0 and cvs[("c", "a")] == 0.0
    assert cvs[("a", "b")] > 0.1 and cvs[("d", "e")] > 0.1
    assert 0 < evaluations <= 10 * 64


def test_log2_scale_for_positive_numbers_index_otherwise() -> None:
    s = value_scale([1, 2, 4, 8])
    assert [s[v] for v in (1, 2, 4, 8)] == [1.0, 2.0, 3.0, 4.0]
    s = value_scale([-1, 0, 1])
    assert [s[v] for v in (-1, 0, 1)] == [1.0, 2.0, 3.0]
    s = value_scale(["global", "local"])
    assert s["local"] == 2.0


def test_pair_cv_uses_base_then_falls_back_to_whole_dataset() -> None:
    # y's best value follows x exactly: strong interaction.
    recs = [({"x": x, "y": y, "z": 0}, abs(x - y)) for x in (1, 2, 4) for y in (1, 2, 4)]
    scale = value_scale([1, 2, 4])
    assert pair_cv(recs, "y", "x", scale, base={"x": 1, "y": 1, "z": 0}) > 0.3
    # No record has z == 5: falls back to all records and still sees the interaction.
    assert pair_cv(recs, "y", "x", scale, base={"x": 1, "y": 1, "z": 5}) > 0.3


def test_deque_respects_max_group_and_threshold() -> None:
    names = ["p", "q", "r", "s"]
    cvs = {(a, b): 0.0 for a in names for b in names if a != b}
    cvs[("p", "q")] = 0.9
    cvs[("q", "r")] = 0.8
    cvs[("r", "s")] = 0.05        # below threshold: not an interaction
    assert deque_grouping(cvs, names, threshold=0.1, max_group=3) == [["p", "q", "r"], ["s"]]
    assert deque_grouping(cvs, names, threshold=0.1, max_group=2)[0] == ["p", "q"]
    assert sorted(map(sorted, deque_grouping(cvs, names, max_group=1))) == [["p"], ["q"], ["r"], ["s"]]


def test_every_parameter_in_exactly_one_group() -> None:
    rng = np.random.default_rng(7)
    names = [f"x{i}" for i in range(6)]
    cvs = {(a, b): float(rng.random()) for a in names for b in names if a != b}
    groups = deque_grouping(cvs, names, threshold=0.3, max_group=3)
    flat = [n for g in groups for n in g]
    assert sorted(flat) == sorted(names)
    assert all(1 <= len(g) <= 3 for g in groups)


def test_interaction_cvs_ignores_failures() -> None:
    recs = [({"x": x, "y": y}, math.inf if x == 4 else float(abs(x - y))) for x in (1, 2, 4) for y in (1, 2, 4)]
    cvs = interaction_cvs({"x": [1, 2, 4], "y": [1, 2, 4]}, recs)
    assert math.isfinite(cvs[("x", "y")])
