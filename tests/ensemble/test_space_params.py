"""Parameter types: value sets, index view, unit-cube round trips, errors."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ensemble import (
    Boolean,
    ConfigurationError,
    Enum,
    Float,
    Integer,
    LogFloat,
    LogInteger,
    Permutation,
    PowerOfTwo,
    SearchSpace,
    SpaceError,
)
from ensemble.space.params import parameter_from_json

DISCRETE = [
    Integer("i", -3, 7),
    LogInteger("li", 1, 300),
    LogInteger("li2", 5, 9),
    PowerOfTwo("p", 2, 1024),
    Enum("e", ["a", 1, 1.0, 2.5, None, True, False]),
    Boolean("b"),
    Permutation("perm", ["x", "y", "z", "w"]),
]


@pytest.mark.parametrize("p", DISCRETE, ids=lambda p: p.kind)
def test_index_view_is_a_bijection(p):
    vals = p.values()
    assert len(vals) == p.cardinality
    for i, v in enumerate(vals):
        assert p.index_of(v) == i
        assert p.value_at(i) == v
        assert p.is_legal(v)


@pytest.mark.parametrize("p", DISCRETE, ids=lambda p: p.kind)
def test_unit_round_trip_is_exact_for_every_value(p):
    for v in p.values():
        x = p.to_unit(v)
        assert len(x) == p.dims
        assert all(0.0 <= c <= 1.0 for c in x)
        assert p.from_unit(x) == v


@pytest.mark.parametrize("p", DISCRETE, ids=lambda p: p.kind)
def test_from_unit_always_gives_legal_values(p):
    rng = np.random.default_rng(3)
    for _ in range(200):
        x = rng.uniform(-0.2, 1.2, p.dims)
        assert p.is_legal(p.from_unit(x))
    assert p.is_legal(p.from_unit([0.0] * p.dims))
    assert p.is_legal(p.from_unit([1.0] * p.dims))


def test_discrete_cells_share_the_cube_equally():
    p = Integer("i", 0, 3)
    xs = np.linspace(0, 1, 4001)
    counts = np.bincount([p.from_unit([x]) for x in xs])
    assert counts.min() >= 999 and counts.max() <= 1001


def test_log_integer_gives_small_values_their_share():
    p = LogInteger("n", 1, 1000)
    xs = np.linspace(0, 1, 1001)
    small = sum(p.from_unit([x]) <= 10 for x in xs)
    assert 300 < small < 370  # log10(10)/log10(1000) = 1/3 of the axis


@pytest.mark.parametrize(
    "p", [Float("f", -2.0, 3.0), LogFloat("lf", 1e-4, 10.0)], ids=str
)
def test_float_round_trip_and_range(p):
    rng = np.random.default_rng(0)
    for _ in range(100):
        v = p.sample(rng)
        assert p.low <= v <= p.high
        assert math.isclose(p.from_unit(p.to_unit(v)), v, rel_tol=1e-12, abs_tol=1e-12)
    assert p.from_unit([0.0]) == p.low
    assert math.isclose(p.from_unit([1.0]), p.high)
    assert p.from_unit([5.0]) == pytest.approx(p.high)


def test_log_float_is_log_scaled():
    p = LogFloat("lf", 1e-3, 1e3)
    assert p.from_unit([0.5]) == pytest.approx(1.0)


def test_power_of_two_values():
    assert PowerOfTwo("p", 1, 16).values() == [1, 2, 4, 8, 16]
    assert not PowerOfTwo("p", 1, 16).is_legal(3)


def test_bool_int_float_are_distinct_enum_values():
    e = Enum("e", [1, 1.0, True])
    assert [e.index_of(1), e.index_of(1.0), e.index_of(True)] == [0, 1, 2]
    assert not Enum("e", [1, 2]).is_legal(True)
    assert not Integer("i", 0, 3).is_legal(True)
    assert not Integer("i", 0, 3).is_legal(1.0)


def test_permutation_random_keys_and_lehmer_rank():
    p = Permutation("perm", ["a", "b", "c"])
    assert p.cardinality == 6
    assert p.values()[0] == ["a", "b", "c"]
    assert p.values()[-1] == ["c", "b", "a"]
    assert p.from_unit([0.9, 0.1, 0.5]) == ["b", "c", "a"]
    assert not p.is_legal(["a", "a", "b"])
    assert not p.is_legal(["a", "b"])


@pytest.mark.parametrize(
    "make, fragment",
    [
        (lambda: Integer("i", 5, 1), "low=5 > high=1"),
        (lambda: Integer("i", 0.5, 3), "must be ints"),
        (lambda: LogInteger("i", 0, 3), "must be >= 1"),
        (lambda: LogFloat("f", 0.0, 3.0), "must be > 0"),
        (lambda: PowerOfTwo("p", 3, 16), "low=3 must be a power of two"),
        (lambda: Enum("e", []), "values is empty"),
        (lambda: Enum("e", ["a", "a"]), "appears twice"),
        (lambda: Enum("e", [[1, 2]]), "not JSON-native"),
        (lambda: Float("f", 0.0, math.inf), "finite"),
        (lambda: Integer("not a name", 0, 1), "identifier"),
        (lambda: Permutation("p", []), "items is empty"),
    ],
)
def test_bad_definitions_name_the_parameter_and_fix(make, fragment):
    with pytest.raises(SpaceError) as info:
        make()
    assert fragment in str(info.value)


def test_parameters_json_round_trip():
    for p in DISCRETE + [Float("f", 0.0, 1.0), LogFloat("g", 0.1, 1.0)]:
        q = parameter_from_json(p.to_json())
        assert q == p and type(q) is type(p)
    with pytest.raises(SpaceError, match="unknown 'type'"):
        parameter_from_json({"type": "Nope", "name": "x"})


def test_space_unit_cube_round_trip_and_dims():
    s = SearchSpace().add(*DISCRETE, Float("f", 0.0, 1.0))
    assert s.dims == sum(p.dims for p in s.params) == 6 + 4 + 1
    rng = np.random.default_rng(1)
    for c in s.sample(rng, 50):
        x = s.to_unit(c)
        assert x.shape == (s.dims,) and np.all((x >= 0) & (x <= 1))
        back = s.from_unit(x)
        assert {k: v for k, v in back.items() if k != "f"} == {
            k: v for k, v in c.items() if k != "f"
        }
        assert back["f"] == pytest.approx(c["f"])
    with pytest.raises(ConfigurationError, match="shape"):
        s.from_unit(np.zeros(3))


def test_size_is_exact_product_and_inf_with_floats():
    s = SearchSpace(Integer("a", 1, 10), PowerOfTwo("b", 1, 8), Boolean("c"))
    assert s.size == 10 * 4 * 2
    s.add(Float("f", 0, 1))
    assert s.size == math.inf


def test_duplicate_parameter_names_are_refused():
    with pytest.raises(SpaceError, match="already in the space"):
        SearchSpace(Integer("a", 0, 1), Boolean("a"))


def test_check_names_the_parameter():
    s = SearchSpace(Integer("a", 0, 3), Enum("m", ["x", "y"]))
    with pytest.raises(ConfigurationError, match="'m'"):
        s.check({"a": 1, "m": "z"})
    with pytest.raises(ConfigurationError, match="missing \\['m'\\]"):
        s.check({"a": 1})
    with pytest.raises(ConfigurationError, match="unknown \\['q'\\]"):
        s.check({"a": 1, "m": "x", "q": 2})
    assert not s.is_valid({"a": 4, "m": "x"})
    assert s.is_valid({"a": 3, "m": "x"})
