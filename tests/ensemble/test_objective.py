"""Objectives: scalar (lower is better, failures last), value, JSON round trip."""

from __future__ import annotations

import math

import pytest

from ensemble import (
    Lexicographic,
    Maximize,
    Minimize,
    ObjectiveError,
    Pareto,
    Result,
    WeightedSum,
)
from ensemble.objective import objective_from_json

FAILED = Result(state="FAILED", reason="x")


def test_minimize_time_and_failures_last():
    o = Minimize()
    assert o.scalar(Result(time=2.0)) == 2.0
    assert o.scalar(FAILED) == math.inf
    assert o.scalar(Result(state="TIMEOUT")) == math.inf
    assert o.better(Result(time=1.0), Result(time=2.0))
    assert o.better(Result(time=1e300), FAILED)


def test_maximize_value_is_positive_scalar_negative():
    o = Maximize("gflops")
    r = Result(metrics={"gflops": 120.0})
    assert o.scalar(r) == -120.0 and o.value(r) == 120.0
    assert o.scalar(FAILED) == math.inf and o.value(FAILED) == -math.inf
    assert o.better(r, Result(metrics={"gflops": 100.0}))


def test_missing_metric_names_it():
    with pytest.raises(ObjectiveError, match="'area'"):
        Minimize("area").scalar(Result(time=1.0))


def test_lexicographic_order():
    o = Lexicographic(["errors", Maximize("gflops")])
    a = Result(metrics={"errors": 0, "gflops": 10})
    b = Result(metrics={"errors": 0, "gflops": 20})
    c = Result(metrics={"errors": 1, "gflops": 1000})
    assert o.key(b) < o.key(a) < o.key(c)
    assert o.scalar(b) < o.scalar(a) < o.scalar(c)
    assert o.better(b, a) and o.better(a, c)
    assert o.scalar(FAILED) == math.inf
    ranked = sorted([c, a, b, FAILED], key=o.scalar)
    assert ranked == [b, a, c, FAILED]


def test_weighted_sum_is_bruel_normalised_sum():
    # Bruel et al. 2017: sum_i w_i * m_i / baseline_i; the baseline scores sum(w)
    o = WeightedSum(
        {"lut": 0.5, "fmax_period": 0.25, "cycles": 0.25},
        baseline={"lut": 1000, "fmax_period": 10.0, "cycles": 200},
    )
    base = Result(metrics={"lut": 1000, "fmax_period": 10.0, "cycles": 200})
    assert o.scalar(base) == pytest.approx(1.0)
    r = Result(metrics={"lut": 500, "fmax_period": 10.0, "cycles": 400})
    assert o.scalar(r) == pytest.approx(0.5 * 0.5 + 0.25 * 1.0 + 0.25 * 2.0)
    assert o.scalar(FAILED) == math.inf


def test_weighted_sum_errors_name_the_metric():
    with pytest.raises(ObjectiveError, match="'b'"):
        WeightedSum({"a": 1, "b": 1}, {"a": 1})
    with pytest.raises(ObjectiveError, match="is 0"):
        WeightedSum({"a": 1}, {"a": 0})


def test_pareto_front_and_scalarisation():
    o = Pareto(["time", "energy"])
    rs = [
        Result(time=1.0, metrics={"energy": 5.0}),
        Result(time=2.0, metrics={"energy": 2.0}),
        Result(time=3.0, metrics={"energy": 3.0}),  # dominated by the second
        FAILED,
    ]
    assert o.front(rs) == [0, 1]
    assert o.scalar(rs[0]) == 6.0 and o.scalar(FAILED) == math.inf


@pytest.mark.parametrize(
    "o",
    [
        Minimize(),
        Maximize("gflops"),
        Lexicographic(["a", Maximize("b")]),
        WeightedSum({"a": 1.0}, {"a": 2.0}),
        Pareto(["a", Maximize("b")], scale={"a": 2.0}),
    ],
    ids=lambda o: o.kind,
)
def test_json_round_trip(o):
    assert objective_from_json(o.to_json()) == o


def test_unknown_objective_json():
    with pytest.raises(ObjectiveError, match="unknown type"):
        objective_from_json({"type": "Best"})
