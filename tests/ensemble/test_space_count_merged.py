"""``count_valid(merge=True)``: counting by variable elimination gives the join's number, exactly.

The merged count is what the CUDA space-count tests use (tests/apps/stencil_cases.py), so it must
agree with the join on everything the join handles: expression rules, recorded tables
(``restrict_to``), callables, strings and booleans; and it must say None, not guess, past its limit.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ensemble import Enum, Integer, SearchSpace
from ensemble.errors import SpaceError
from tests.ensemble.test_space_fuzz import brute, random_case


@pytest.mark.parametrize("seed", range(40))
def test_random_spaces_count_the_same_as_the_join_and_brute_force(seed: int) -> None:
    s, _ = random_case(seed)
    want = len(brute(s))
    assert s.count_valid(merge=True) == want
    assert random_case(seed)[0].count_valid() == want


def test_a_chain_is_counted_far_beyond_what_the_join_can_hold() -> None:
    """x0 < x1 < ... < x14 over 0..19: C(20, 15) valid points of a 3e19-point grid.  Each rule reads two
    neighbours, so one column dies per step and at most 20 merged rows remain, where the join keeps every
    valid partial row (more than 10**4 of them: it gives up under that limit)."""
    s = SearchSpace(*(Integer(f"x{i}", 0, 19) for i in range(15)))
    for i in range(14):
        s.require(f"x{i} < x{i + 1}")
    assert s.count_valid(limit=10**4) is None  # the join gives up
    assert s.count_valid(limit=10**4, merge=True) == math.comb(20, 15)
    assert s.count_valid(limit=10**6) == math.comb(20, 15)  # and agrees when it does not


def test_strings_booleans_and_a_callable() -> None:
    s = SearchSpace(
        Enum("mem", ["global", "local", "image"]), Integer("wg", 1, 64), Enum("vec", [1, 2, 4, 8]),
        Enum("fast", [False, True]),
    )
    s.require("mem != 'image' or vec <= 2")
    s.require("wg * vec <= 128 or not fast")
    s.require(lambda c: c["wg"] % c["vec"] == 0 or c["mem"] == "local")
    assert s.count_valid(merge=True) == s.count_valid() == len(brute(s))


def test_past_the_limit_it_says_none() -> None:
    """One rule over all five parameters: nothing dies before the end, so the merged rows are the
    join's rows and the limit stops both."""
    s = SearchSpace(*(Integer(f"x{i}", 0, 99) for i in range(5)))
    s.require("(x0 * x1 + x2 * x3 + x4) % 7 != 3")
    assert s.count_valid(limit=10**5, merge=True) is None


def test_a_merged_count_does_not_change_later_draws() -> None:
    """Counting leaves the space's state for sampling as it was: the same seed draws the same points as
    in a space never counted."""
    def space() -> SearchSpace:
        s = SearchSpace(Integer("a", 0, 30), Integer("b", 0, 30), Integer("c", 0, 30))
        return s.require("a + b <= 30").require("b * c <= 200")

    counted = space()
    assert counted.count_valid(merge=True) == space().count_valid()
    assert counted.sample(np.random.default_rng(3), 20) == space().sample(np.random.default_rng(3), 20)


def test_merge_must_be_a_bool() -> None:
    with pytest.raises(SpaceError, match="merge must be True or False"):
        SearchSpace(Integer("a", 0, 3)).count_valid(merge="yes")  # type: ignore[arg-type]
