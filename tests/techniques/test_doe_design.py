"""D-optimal designs: Fedorov's exchange against known optimal designs (techniques.doe.design)."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ensemble.errors import TechniqueError
from ensemble.space import Enum, Integer, SearchSpace
from techniques.doe.design import (
    candidate_set,
    code_columns,
    coordinate_exchange,
    d_criterion,
    d_efficiency,
    fedorov,
)
from techniques.doe.factors import factors_of
from techniques.doe.models import auto_model, model_matrix, parse_formula
from techniques.doe.subspace import SubSpace

#: Fedorov's exchange is a heuristic; on these small cases it must reach the optimum within this D-efficiency
TOLERANCE = 1e-6


def _cube(k: int, levels: list[int]) -> tuple[SearchSpace, list[dict]]:
    space = SearchSpace().add(*[Enum(f"x{i}", levels) for i in range(1, k + 1)])
    return space, [dict(c) for c in space.enumerate_valid()]


def test_d_criterion_of_a_two_level_full_factorial_is_one() -> None:
    space, full = _cube(3, [-1, 1])
    x = model_matrix(auto_model(factors_of(space), "linear"), full)[0]
    assert d_criterion(x) == pytest.approx(1.0)


@pytest.mark.parametrize("seed", range(5))
def test_fedorov_finds_the_orthogonal_half_fraction(seed: int) -> None:
    """2^3, main effects, 4 runs: the optimum is a half fraction (x1 x2 x3 = +-1), D = 1."""
    space, full = _cube(3, [-1, 1])
    x = model_matrix(auto_model(factors_of(space), "linear"), full)[0]
    design = fedorov(code_columns(x), 4, np.random.default_rng(seed))
    assert design.d == pytest.approx(1.0, abs=TOLERANCE)
    products = {full[i]["x1"] * full[i]["x2"] * full[i]["x3"] for i in design.rows}
    assert len(products) == 1
    assert len(set(design.rows)) == 4


@pytest.mark.parametrize("seed", range(5))
def test_fedorov_matches_exhaustive_search_on_a_3x3_quadratic(seed: int) -> None:
    """Full quadratic model in two 3-level factors (6 terms), 7 of the 9 points: brute force gives the optimum."""
    space, full = _cube(2, [-1, 0, 1])
    model = parse_formula("y ~ x1 + x2 + I(x1 ** 2) + I(x2 ** 2) + x1:x2", factors_of(space))
    x = code_columns(model_matrix(model, full)[0])
    best = max(d_criterion(x[list(rows)]) for rows in itertools.combinations(range(9), 7))
    design = fedorov(x, 7, np.random.default_rng(seed))
    assert d_efficiency(x[design.rows], x[list(design.rows)]) == 1.0
    assert design.d / best == pytest.approx(1.0, abs=TOLERANCE)


def test_quadratic_in_one_factor_takes_both_ends_and_the_centre() -> None:
    space = SearchSpace().add(Integer("a", -2, 2))
    full = [dict(c) for c in space.enumerate_valid()]
    x = code_columns(model_matrix(auto_model(factors_of(space), "quadratic"), full)[0])
    design = fedorov(x, 3, np.random.default_rng(0))
    assert sorted(full[i]["a"] for i in design.rows) == [-2, 0, 2]


def test_design_smaller_than_the_model_is_refused_with_the_fix() -> None:
    space, full = _cube(3, [-1, 1])
    x = model_matrix(auto_model(factors_of(space), "linear"), full)[0]
    with pytest.raises(TechniqueError, match="design_size"):
        fedorov(x, 3, np.random.default_rng(0))
    with pytest.raises(TechniqueError, match="candidates"):
        fedorov(x, 9, np.random.default_rng(0))


def test_included_points_stay_in_the_design() -> None:
    space, full = _cube(3, [-1, 1])
    x = model_matrix(auto_model(factors_of(space), "linear"), full)[0]
    design = fedorov(code_columns(x), 5, np.random.default_rng(1), include=[0, 7])
    assert {0, 7} <= set(design.rows)


def test_coordinate_exchange_reaches_the_half_fraction() -> None:
    space, full = _cube(3, [-1, 1])
    model = auto_model(factors_of(space), "linear")
    start = [full[i] for i in (0, 1, 2, 3)]
    design, passes = coordinate_exchange(start, {f"x{i}": [-1, 1] for i in (1, 2, 3)},
                                         lambda cs: model_matrix(model, cs)[0], space.is_valid)
    assert d_criterion(model_matrix(model, design)[0]) == pytest.approx(1.0)
    assert passes >= 1


@pytest.mark.parametrize("strategy", ["uniform", "biased", "biased+normal"])
def test_candidate_sets_are_valid_and_distinct(strategy: str) -> None:
    space = SearchSpace().add(Integer("a", 0, 20), Integer("b", 0, 20), Enum("k", ["p", "q"]))
    space.require("a + b <= 25")
    cands, exact = candidate_set(SubSpace(space), np.random.default_rng(3), 100, strategy=strategy,
                                 numeric=["a", "b"])
    assert not exact
    assert all(space.is_valid(c) for c in cands)
    assert len({space.config_hash(c) for c in cands}) == len(cands)


def test_small_sub_space_is_enumerated_exactly() -> None:
    space, _ = _cube(2, [-1, 0, 1])
    cands, exact = candidate_set(SubSpace(space, {"x1": 0}), np.random.default_rng(0), 100)
    assert exact and len(cands) == 3 and all(c["x1"] == 0 for c in cands)


def test_biased_candidates_favour_the_ends() -> None:
    space = SearchSpace().add(*[Integer(n, 0, 20) for n in "abcde"])
    uni, _ = candidate_set(SubSpace(space), np.random.default_rng(0), 300, strategy="uniform")
    bia, _ = candidate_set(SubSpace(space), np.random.default_rng(0), 300, strategy="biased", numeric=list("abcde"))
    ends = lambda cs: np.mean([c["a"] in (0, 20) for c in cs])
    assert ends(uni) < 0.2
    assert ends(bia) > 0.5
