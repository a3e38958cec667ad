"""Result, TrialState and coerce_result: what run() may return."""

from __future__ import annotations

import math

import numpy as np
import pytest

from ensemble import ObjectiveError, Result, TrialState, coerce_result


def test_float_becomes_time():
    assert coerce_result(1.5) == Result(time=1.5)
    assert coerce_result(2) == Result(time=2.0)
    assert coerce_result(np.float32(0.25)).time == 0.25


def test_result_passes_through_validated():
    r = coerce_result(Result(time=1, metrics={"area": np.int64(3)}, times=[1, 2]))
    assert r.time == 1.0 and r.metrics == {"area": 3.0} and r.times == [1.0, 2.0]


def test_failures_need_no_time():
    r = coerce_result(Result(state="FAILED", reason="compile error"))
    assert not r.ok and r.reason == "compile error"
    assert coerce_result(Result(state=TrialState.TIMEOUT)).state == "TIMEOUT"


@pytest.mark.parametrize("bad", [math.inf, -1.0, Result(time=-0.5), Result(metrics={"time": math.inf}),
                                 Result(time=1.0, times=[1.0, -2.0])])
def test_a_time_must_be_finite_and_non_negative(bad):
    """issue 16: inf and negative times were stored as OK (a -1 became the best)."""
    with pytest.raises(ObjectiveError, match="finite and >= 0"):
        coerce_result(bad)


def test_other_metrics_may_be_negative_and_failed_results_keep_their_reason():
    assert coerce_result(Result(metrics={"gain": -3.0})).metrics == {"gain": -3.0}
    r = coerce_result(Result(state="FAILED", reason="parse error", time=math.inf))
    assert r.state == "FAILED" and r.reason == "parse error"


@pytest.mark.parametrize(
    "returned, fragment",
    [
        (math.nan, "NaN"),
        (Result(time=math.nan), "Result.time is NaN"),
        (Result(metrics={"a": math.nan}), "metrics['a'] is NaN"),
        ("fast", "return a float"),
        (None, "return a float"),
        (True, "return a float"),
        ({"time": 1}, "return a float"),
        (Result(), "neither time nor metrics"),
        (Result(time="1"), "not a number"),
        (Result(metrics=[1]), "dict of name"),
        (np.array([1.0, 2.0]), "is not a number"),
        (Result(time=np.array([1.0, 2.0])), "is not a number"),
    ],
)
def test_bad_returns_are_objective_errors(returned, fragment):
    with pytest.raises(ObjectiveError) as info:
        coerce_result(returned)
    assert fragment in str(info.value)
    assert isinstance(info.value, TypeError)


def test_unknown_state_is_refused():
    with pytest.raises(ObjectiveError, match="state='DONE'"):
        Result(state="DONE")


def test_trial_states():
    assert [s.value for s in TrialState] == [
        "WAITING",
        "RUNNING",
        "OK",
        "FAILED",
        "TIMEOUT",
        "INVALID",
    ]
    assert TrialState.OK == "OK" and str(TrialState.FAILED) == "FAILED"


def test_metric_lookup():
    r = Result(time=2.0, metrics={"x": 1.0})
    assert r.metric("time") == 2.0 and r.metric("x") == 1.0 and r.metric("y") is None
    assert Result(metrics={"time": 3.0}).metric("time") == 3.0
