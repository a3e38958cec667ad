"""DLMT's sub-space after fixing factors (techniques/doe/subspace.py).

Why: a DLMT run on the FPGA flow's space (19 options under one dependency
constraint) fixed 15 factors, counted a handful of valid points left, and then
stopped with a SpaceError, because ``SearchSpace.enumerate_valid`` refuses a
constrained group whose unrestricted grid is too large.  A count must be a
promise that the listing works.
"""

from __future__ import annotations

import numpy as np
import pytest

from ensemble.errors import SpaceError
from ensemble.space import Integer, SearchSpace
from techniques.doe.design import candidate_set
from techniques.doe.subspace import SubSpace

NAMES = "abcdefgh"


def coupled_space() -> SearchSpace:
    """Eight parameters of ten values under one constraint: a 10^8 grid enumerate_valid refuses."""
    return SearchSpace(*(Integer(n, 0, 9) for n in NAMES)).require(
        lambda c: sum(c[n] for n in NAMES) % 2 == 0, names=list(NAMES))


def test_a_counted_sub_space_can_be_listed_even_when_enumerate_valid_refuses() -> None:
    space = coupled_space()
    sub = SubSpace(space, {n: 1 for n in NAMES[:6]})
    with pytest.raises(SpaceError):  # the situation of the FPGA run
        list(sub.space.enumerate_valid())
    assert sub.count(20_000) == 50
    rows = sub.enumerate()
    assert len(rows) == 50
    assert all(space.is_valid(c) and all(c[n] == 1 for n in NAMES[:6]) for c in rows)
    assert len({tuple(c.values()) for c in rows}) == 50
    configs, exact = candidate_set(sub, np.random.default_rng(0), 100)
    assert exact and len(configs) == 50


def test_a_sub_space_too_large_to_list_is_not_counted_and_is_sampled() -> None:
    space = coupled_space()
    sub = SubSpace(space, {"a": 1})  # 10^7 free points: neither enumerate_valid nor the product walk
    assert sub.count(1000) is None
    configs, exact = candidate_set(sub, np.random.default_rng(0), 50)
    assert not exact and configs and all(space.is_valid(c) and c["a"] == 1 for c in configs)

