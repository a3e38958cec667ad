"""Exact counting on grids up to 1e7 points, checked against closed-form counts."""

from __future__ import annotations

import numpy as np
import pytest

from ensemble import Integer, SearchSpace
from ensemble.space import fallback


def digit_sum_count(k: int, total: int) -> int:
    """Number of k-digit strings (0-9) whose digits sum to ``total`` (polynomial DP)."""
    ways = np.zeros(9 * k + 1, dtype=object)
    ways[0] = 1
    for _ in range(k):
        nxt = np.zeros_like(ways)
        for d in range(10):
            nxt[d:] += ways[: len(ways) - d]
        ways = nxt
    return int(ways[total])


@pytest.mark.parametrize("k, total", [(4, 18), (6, 27)])
def test_digit_sum_counts(k, total):
    s = SearchSpace(*(Integer(f"x{i}", 0, 9) for i in range(k)))
    s.require(" + ".join(f"x{i}" for i in range(k)) + f" == {total}")
    assert s.count_valid() == digit_sum_count(k, total)


@pytest.mark.slow
def test_ten_million_point_grid_is_counted_exactly():
    s = SearchSpace(*(Integer(f"x{i}", 0, 9) for i in range(7)))
    s.require(" + ".join(f"x{i}" for i in range(7)) + " == 30")
    assert s.size == 10**7
    assert s.count_valid() == digit_sum_count(7, 30)


def test_count_limit_returns_none_for_unsplittable_large_grids():
    s = SearchSpace(*(Integer(f"x{i}", 0, 99) for i in range(5)))
    s.require("(x0 * x1 + x2 * x3 + x4) % 7 != 3")  # no pruning possible: 1e10 rows
    assert s.count_valid(limit=10**5) is None
    # but sampling still works, by rejection inside the component
    rng = np.random.default_rng(0)
    assert all(s.is_valid(c) for c in s.sample(rng, 50))


def test_count_beyond_limit_when_components_are_small():
    s = SearchSpace(*(Integer(f"x{i}", 0, 99) for i in range(12)))
    for i in range(0, 12, 2):
        s.require(f"x{i} < x{i + 1}")
    assert s.size == 100**12
    assert s.count_valid(limit=10**5) == (100 * 99 // 2) ** 6


def test_enumerate_refuses_components_over_the_limit():
    s = SearchSpace(*(Integer(f"x{i}", 0, 99) for i in range(4))).require(
        "x0 + x1 + x2 + x3 > 3"
    )
    with pytest.raises(Exception, match="use sample"):
        next(s.enumerate_valid(limit=1000))


def test_huge_parameters_are_sampled_and_repaired_without_tabulating():
    from ensemble import Permutation

    order = Permutation("order", list("abcdefghijkl"))  # 12! orderings
    s = SearchSpace(order, Integer("seed", 0, 2**40), Integer("k", 0, 7))
    s.require(lambda c: c["order"][0] != "a" or c["k"] == 0, names=["order", "k"])
    s.require("seed % 1000 < k * 100")
    rng = np.random.default_rng(0)
    for c in s.sample(rng, 30):
        assert s.is_valid(c)
    bad = {"order": list("abcdefghijkl"), "seed": 999, "k": 3}
    fixed = s.repair(bad, rng)
    assert s.is_valid(fixed)
    assert s.count_valid() is None
    assert SearchSpace(Integer("seed", 0, 2**40)).count_valid() == 2**40 + 1


def test_tight_constraint_in_a_huge_component_is_sampled_validly():
    # 1e16 grid, valid fraction ~2e-12: rejection is hopeless, the pruned join is not
    s = SearchSpace(*(Integer(f"x{i}", 0, 99) for i in range(8)))
    s.require(" + ".join(f"x{i}" for i in range(8)) + " == 10")
    assert s.count_valid() == 19448  # C(17, 7) compositions
    rng = np.random.default_rng(0)
    assert all(s.is_valid(c) for c in s.sample(rng, 100))


def test_beam_finds_valid_points_when_the_table_is_too_large():
    s = SearchSpace(*(Integer(f"x{i}", 0, 99) for i in range(6)))
    s.require("x0 * x1 * x2 * x3 * x4 * x5 == 0 or x0 + x1 + x2 + x3 + x4 + x5 <= 12")
    comp = s._comps()[0]
    assert comp.table(limit=10**4) is None  # too many survivors for this limit
    rows = fallback.beam(comp, np.random.default_rng(0), 50)
    assert rows.shape == (50, 6)
    for r in rows:
        assert s.is_valid(comp.decode(r))
