"""OpenTuner objectives map to ours; user subclasses are read from their order terms."""

from __future__ import annotations

import pytest

from ensemble.compat.opentuner import UnsupportedError
from ensemble.compat.opentuner._adapter import to_ensemble_result
from ensemble.compat.opentuner.resultsdb.models import Result
from ensemble.compat.opentuner.search.objective import (
    MaximizeAccuracy,
    MaximizeAccuracyMinimizeSize,
    MaximizeAttribute,
    MinimizeSize,
    MinimizeTime,
    SearchObjective,
    ThresholdAccuracyMinimizeTime,
    ensemble_objective,
)
from ensemble.objective import Lexicographic, Maximize, Minimize


def test_builtin_objectives_map_to_ours():
    assert ensemble_objective(MinimizeTime()) == Minimize("time")
    assert ensemble_objective(MaximizeAccuracy()) == Maximize("accuracy")
    assert ensemble_objective(MinimizeSize()) == Minimize("size")
    assert ensemble_objective(MaximizeAccuracyMinimizeSize()) == Lexicographic([Maximize("accuracy"),
                                                                               Minimize("size")])


def _scalar(objective, result):
    return ensemble_objective(objective).scalar(to_ensemble_result(result, objective))


def test_threshold_accuracy_orders_like_opentuner():
    obj = ThresholdAccuracyMinimizeTime(0.9)
    slow_good = Result(time=5.0, accuracy=0.95)
    fast_good = Result(time=1.0, accuracy=0.92)
    fast_bad = Result(time=0.1, accuracy=0.5)
    ranked = sorted([slow_good, fast_bad, fast_good], key=lambda r: _scalar(obj, r))
    assert ranked == [fast_good, slow_good, fast_bad]
    assert obj.lt(fast_good, slow_good) and obj.min([fast_bad, fast_good]) is fast_good


def test_attribute_objective_reads_extra_and_missing_value():
    obj = MaximizeAttribute("qps", missing_value=float("-inf"))
    assert ensemble_objective(obj) == Maximize("qps")
    assert _scalar(obj, Result(time=1.0).update_attributes({"qps": 50.0})) == -50.0
    assert _scalar(obj, Result(time=1.0)) == float("inf")


def test_user_subclass_by_order_terms():
    class MinimizeEnergyThenTime(SearchObjective):
        def result_order_by_terms(self):
            return [Result.energy, Result.time]

        def result_compare(self, a, b):  # OpenTuner wants it; we rank by the terms
            return (a.energy, a.time) > (b.energy, b.time)

    assert ensemble_objective(MinimizeEnergyThenTime()) == Lexicographic([Minimize("energy"), Minimize("time")])


def test_unreadable_user_objective_is_refused_with_the_way_out():
    class SqlOrdered(SearchObjective):
        def result_order_by_terms(self):
            return ["min(accuracy, 0.5) desc"]

    with pytest.raises(UnsupportedError, match="result_order_by_terms.*Result columns only"):
        ensemble_objective(SqlOrdered())


def test_result_states():
    assert Result(time=2.0).to_ensemble().time == 2.0
    assert Result(state="ERROR").to_ensemble().state == "FAILED"
    assert Result(state="TIMEOUT").to_ensemble().state == "TIMEOUT"
    assert Result(time=float("inf")).to_ensemble().state == "FAILED"
    assert Result(time=1.0, accuracy=0.9).to_ensemble().metrics == {"accuracy": 0.9}
