"""``opentuner.search.objective``: OpenTuner's objectives, each mapped to one of ours.

Why a mapping and not OpenTuner's comparison functions: our techniques
minimise one number per result (``Objective.scalar``) and our database
stores the objective as JSON, so each OpenTuner objective names the
``ensemble.objective`` it stands for (``to_ensemble()``). A user subclass is
read from its ``result_order_by_terms()`` (``[Result.time]``,
``[-Result.accuracy, Result.size]``: minimise, maximise, in order); one
whose order cannot be read that way is refused at start-up
(:func:`ensemble_objective`). The comparison helpers (``compare``, ``lt``,
``min``...) are kept for user techniques; they compare through the mapped
objective.
"""

from __future__ import annotations

import functools
import math
from typing import Any

from ensemble.compat.opentuner._errors import UnsupportedError
from ensemble.compat.opentuner.resultsdb.models import Column, Configuration, Result
from ensemble.objective import Lexicographic, Maximize, Minimize, Objective

__all__ = [
    "MaximizeAccuracy",
    "MaximizeAccuracyMinimizeSize",
    "MaximizeAttribute",
    "MinimizeAttribute",
    "MinimizeEnergy",
    "MinimizeSize",
    "MinimizeTime",
    "SearchObjective",
    "ThresholdAccuracyMinimizeTime",
    "ensemble_objective",
]

#: the metric ThresholdAccuracyMinimizeTime adds to each result: min(accuracy, target)
CAPPED_ACCURACY = "accuracy_capped"


class SearchObjective:
    """Base class of OpenTuner objectives (subclass and define result_order_by_terms())."""

    def __init__(self) -> None:
        self.driver: Any = None

    def set_driver(self, driver: Any) -> None:
        self.driver = driver

    def result_order_by_terms(self) -> list[Any]:
        """Columns to order results by, best first: ``Result.time`` ascending, ``-Result.x`` descending."""
        raise NotImplementedError(
            f"{type(self).__name__}.result_order_by_terms(): return e.g. [Result.time] or [-Result.accuracy]"
        )

    def to_ensemble(self) -> Objective:
        """Our objective; the default reads result_order_by_terms()."""
        return _from_terms(self, self.result_order_by_terms())

    def derived_metrics(self, result: Result) -> dict[str, float]:
        """Extra metrics this objective needs on each result (none by default)."""
        return {}

    # -- comparisons, for user techniques -----------------------------------------
    def _scalar(self, item: Any) -> float:
        if isinstance(item, Configuration):
            if self.driver is None:
                raise UnsupportedError("comparing Configurations outside a tuning run",
                                       "compare Result objects, or call inside a technique")
            item = self.driver.result_for(item)
            if item is None:
                return math.inf
        value = getattr(item, "_ensemble_value", None)
        if value is not None:
            return float(value)
        result = item.to_ensemble()
        metrics = dict(result.metrics)
        metrics.update(self.derived_metrics(item))
        result.metrics = metrics
        return self.to_ensemble().scalar(result)

    def result_compare(self, result1: Any, result2: Any) -> int:
        a, b = self._scalar(result1), self._scalar(result2)
        return (a > b) - (a < b)

    def compare(self, a: Any, b: Any) -> int:
        return self.result_compare(a, b)

    def config_compare(self, config1: Any, config2: Any) -> int:
        return self.result_compare(config1, config2)

    def lt(self, a: Any, b: Any) -> bool:
        return self.compare(a, b) < 0

    def lte(self, a: Any, b: Any) -> bool:
        return self.compare(a, b) <= 0

    def gt(self, a: Any, b: Any) -> bool:
        return self.compare(a, b) > 0

    def gte(self, a: Any, b: Any) -> bool:
        return self.compare(a, b) >= 0

    def min(self, *items: Any) -> Any:
        seq = list(items[0]) if len(items) == 1 else list(items)
        return min(seq, key=functools.cmp_to_key(self.compare))

    def max(self, *items: Any) -> Any:
        seq = list(items[0]) if len(items) == 1 else list(items)
        return max(seq, key=functools.cmp_to_key(self.compare))

    def is_acceptable(self, result: Any) -> bool:
        return True

    def display(self, result: Any) -> str:
        return ", ".join(f"{k}={getattr(result, k):.4f}" for k in ("time", "accuracy", "energy", "size",
                                                                    "confidence")
                         if isinstance(getattr(result, k), (int, float)))


def _from_terms(objective: Any, terms: list[Any]) -> Objective:
    parts: list[Objective] = []
    for term in terms:
        if not isinstance(term, Column):
            raise UnsupportedError(
                f"objective {type(objective).__name__}: result_order_by_terms() term {term!r}",
                "order by Result columns only ([Result.time], [-Result.accuracy, Result.size]), subclass one of "
                "MinimizeTime, MaximizeAccuracy, MinimizeSize, ThresholdAccuracyMinimizeTime, "
                "MaximizeAccuracyMinimizeSize, or define to_ensemble() returning an ensemble.objective.Objective",
            )
        parts.append(Maximize(term.name) if term.descending else Minimize(term.name))
    if not parts:
        raise UnsupportedError(f"objective {type(objective).__name__} with no result_order_by_terms()",
                               "return at least one Result column, e.g. [Result.time]")
    return parts[0] if len(parts) == 1 else Lexicographic(parts)


class MinimizeTime(SearchObjective):
    def result_order_by_terms(self) -> list[Any]:
        return [Result.time]


class MaximizeAccuracy(SearchObjective):
    def result_order_by_terms(self) -> list[Any]:
        return [-Result.accuracy]


class MinimizeSize(SearchObjective):
    def result_order_by_terms(self) -> list[Any]:
        return [Result.size]


class MinimizeEnergy(SearchObjective):
    def result_order_by_terms(self) -> list[Any]:
        return [Result.energy]


class MaximizeAccuracyMinimizeSize(MaximizeAccuracy):
    """Maximise accuracy, break ties by the smaller size."""

    def result_order_by_terms(self) -> list[Any]:
        return [-Result.accuracy, Result.size]


class ThresholdAccuracyMinimizeTime(SearchObjective):
    """Below ``accuracy_target`` maximise accuracy; at or above it, minimise time.

    Ordered as OpenTuner orders it: by ``min(accuracy, target)`` descending,
    then time; each result gets that capped accuracy as metric
    ``accuracy_capped`` so our Lexicographic objective can order by it.
    """

    def __init__(self, accuracy_target: float, low_accuracy_limit_multiplier: float = 10.0) -> None:
        super().__init__()
        self.accuracy_target = float(accuracy_target)
        self.low_accuracy_limit_multiplier = low_accuracy_limit_multiplier

    def result_order_by_terms(self) -> list[Any]:
        return [-Column(CAPPED_ACCURACY), Result.time]

    def derived_metrics(self, result: Result) -> dict[str, float]:
        if isinstance(result.accuracy, (int, float)):
            return {CAPPED_ACCURACY: min(self.accuracy_target, float(result.accuracy))}
        return {}

    def is_acceptable(self, result: Any) -> bool:
        return bool(result.accuracy is not None and result.accuracy >= self.accuracy_target)


class MinimizeAttribute(SearchObjective):
    """Minimise a column or an extra attribute (``Result(...).set_attribute(name, v)``)."""

    def __init__(self, attribute_name: str, missing_value: float | None = None) -> None:
        super().__init__()
        self.attribute_name = attribute_name
        self.missing_value = missing_value

    def result_order_by_terms(self) -> list[Any]:
        return [Column(self.attribute_name)]

    def derived_metrics(self, result: Result) -> dict[str, float]:
        if self.attribute_name in ("time", "accuracy", "energy", "size", "confidence"):
            return {}
        if self.attribute_name not in result.extra and self.missing_value is not None:
            return {self.attribute_name: float(self.missing_value)}
        return {}


class MaximizeAttribute(MinimizeAttribute):
    """Maximise a column or an extra attribute."""

    def result_order_by_terms(self) -> list[Any]:
        return [-Column(self.attribute_name)]


def ensemble_objective(objective: Any) -> Objective:
    """Our objective for what an app's ``objective()`` returned; UnsupportedError says what to do."""
    if isinstance(objective, Objective):
        return objective
    to_ensemble = getattr(objective, "to_ensemble", None)
    if not callable(to_ensemble):
        raise UnsupportedError(f"objective() returned {objective!r}",
                               "return one of opentuner.search.objective's classes or a subclass of SearchObjective")
    try:
        result = to_ensemble()
    except UnsupportedError:
        raise
    except NotImplementedError as exc:
        raise UnsupportedError(f"objective {type(objective).__name__} without result_order_by_terms()",
                               "define result_order_by_terms() returning Result columns, e.g. [Result.time]") from exc
    if not isinstance(result, Objective):
        raise UnsupportedError(f"{type(objective).__name__}.to_ensemble() returned {result!r}",
                               "return an ensemble.objective.Objective (Minimize, Maximize, Lexicographic)")
    return result
