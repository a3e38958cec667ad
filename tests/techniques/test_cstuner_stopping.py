"""Approximate stopping and the grouped GA over re-indexed valid tuples (Fig. 7)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest

from techniques.cstuner.group_search import GroupSearch
from techniques.cstuner.stopping import ApproximateStop, top_n_cv


def _drive(search: GroupSearch, f, batch: int = 7) -> list[dict]:
    """Run a group search to the end with a synchronous objective; return what it proposed."""
    asked = []
    while not search.done:
        got = search.ask(batch)
        if not got:
            assert search.done, "a search that is not done must propose while nothing is pending"
            break
        for genome, cfg in got:
            asked.append(cfg)
            search.tell(genome, f(cfg))
    return asked


def test_top_n_cv() -> None:
    assert top_n_cv([5.0, 1.0, 1.0, 1.0], 3) == 0.0
    assert math.isinf(top_n_cv([1.0, 2.0], 3))
    assert top_n_cv([1.0, 3.0, 100.0], 2) == pytest.approx(0.5)
    assert top_n_cv([1.0, math.inf, 1.0], 2) == 0.0       # failures do not block settling


def test_flat_group_settles_by_approximate_stopping() -> None:
    tuples = [(x, y) for x in range(16) for y in range(16)]
    s = GroupSearch(["x", "y"], tuples, {"x": 0, "y": 0, "z": 1}, np.random.default_rng(0),
                    population=16, stop=ApproximateStop(top_n=10, threshold=0.01), max_generations=50)
    asked = _drive(s, lambda c: 1.0)
    rep = s.report()
    assert rep is not None and rep.mode == "ga" and rep.reason == "cv"
    assert rep.generations == 2 and len(asked) < len(tuples) // 3


def test_rugged_group_runs_to_the_generation_limit() -> None:
    tuples = [(x, y) for x in range(32) for y in range(32)]
    f = lambda c: 1.0 + ((c["x"] * 37 + c["y"] * 11) % 64)
    s = GroupSearch(["x", "y"], tuples, {"x": 0, "y": 0}, np.random.default_rng(1), population=8,
                    stop=ApproximateStop(top_n=10, threshold=1e-6), max_generations=4)
    _drive(s, f)
    assert s.report().reason == "generations"


def test_small_group_is_exhaustive() -> None:
    tuples = [(1, 1), (2, 1), (4, 2)]
    s = GroupSearch(["x", "y"], tuples, {"x": 1, "y": 1, "z": 0}, np.random.default_rng(0), population=16)
    asked = _drive(s, lambda c: c["x"] + c["y"])
    assert s.mode == "exhaustive" and s.report().reason == "exhaustive"
    assert sorted((c["x"], c["y"]) for c in asked) == sorted(tuples)
    assert s.best()[1] == 2


def test_tuples_are_reindexed_in_ascending_order() -> None:
    # Fig. 7: {(0, 1), (4, 2), (3, 4)} -> indices {0, 2, 1}
    s = GroupSearch(["p0", "p1"], [(0, 1), (4, 2), (3, 4)], {"p0": 0, "p1": 1}, np.random.default_rng(0))
    assert s.tuples[0] == [(0, 1), (3, 4), (4, 2)]
    assert [s.index[0][t] for t in [(0, 1), (4, 2), (3, 4)]] == [0, 2, 1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_grouped_ga_never_proposes_an_invalid_tuple(seed: int) -> None:
    # 7 valid tuples out of a 2^4 x 2^4 product: binary genes must never decode outside them.
    valid = [(x, y) for x, y in itertools.product(range(16), range(16)) if (x * 7 + y * 3) % 37 == 0]
    s = GroupSearch(["x", "y"], valid, {"x": valid[0][0], "y": valid[0][1]}, np.random.default_rng(seed),
                    population=4, max_generations=20)
    assert s.mode == "ga"
    asked = _drive(s, lambda c: float((c["x"] - 9) ** 2 + c["y"]), batch=3)
    assert asked and all((c["x"], c["y"]) in valid for c in asked)


def test_joint_grouped_ga_one_gene_per_group_respects_constraints() -> None:
    groups = [["a", "b"], ["c"]]
    tuples = [[(a, b) for a in range(8) for b in range(4)], [(c,) for c in range(8)]]
    ok = lambda cfg: cfg["a"] + cfg["c"] <= 8
    s = GroupSearch(groups, tuples, {"a": 0, "b": 0, "c": 0}, np.random.default_rng(3), population=8,
                    is_valid=ok, max_generations=10)
    assert s.model is not None and s.model.islands[0].cardinalities == [32, 8]
    asked = _drive(s, lambda c: float((c["a"] - 5) ** 2 + (c["c"] - 3) ** 2 + c["b"]))
    assert all(ok(c) for c in asked)


def test_same_seed_same_trajectory() -> None:
    tuples = [(x,) for x in range(40)]
    f = lambda c: float((c["x"] - 17) ** 2)
    runs = [_drive(GroupSearch(["x"], tuples, {"x": 0}, np.random.default_rng(s), population=8), f)
            for s in (5, 5, 6)]
    assert runs[0] == runs[1] and runs[0] != runs[2]


def test_a_limit_ends_an_exhaustive_search_on_a_random_sample_of_its_tuples() -> None:
    # csTuner's budget share (docs/CSTUNER.md difference 16): a group under a limit smaller than its
    # tuples asks exactly that many, in random order (not its smallest indices), and ends with "budget"
    s = GroupSearch(["x"], [(x,) for x in range(12)], {"x": 0, "z": 1}, np.random.default_rng(0),
                    population=16, limit=4)
    asked = _drive(s, lambda c: float(c["x"]))
    assert s.mode == "exhaustive" and s.report().reason == "budget" and len(asked) == 4
    assert sorted(c["x"] for c in asked) != [0, 1, 2, 3]
    assert s.best()[1] == min(c["x"] for c in asked)


def test_a_limit_ends_a_group_ga_after_that_many_new_evaluations() -> None:
    tuples = [(x, y) for x in range(16) for y in range(16)]
    s = GroupSearch(["x", "y"], tuples, {"x": 0, "y": 0}, np.random.default_rng(0), population=16, limit=10)
    asked = _drive(s, lambda c: float(c["x"] + c["y"]), batch=3)
    assert s.mode == "ga" and s.report().reason == "budget" and len(asked) == 10
    with pytest.raises(ValueError, match="limit"):
        GroupSearch(["x", "y"], tuples, {"x": 0, "y": 0}, np.random.default_rng(0), limit=0)
