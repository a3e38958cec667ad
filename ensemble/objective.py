"""Objectives: how a Result becomes the number techniques minimise.

Every objective maps a :class:`~ensemble.result.Result` to ``scalar`` (lower
is better, ``math.inf`` for any failure so failures rank last) and to
``value``, the number a user reads (a maximised throughput stays positive).

* :class:`Minimize` / :class:`Maximize` one metric.
* :class:`Lexicographic`: compare metrics in priority order; the scalar packs
  them so that ``scalar`` order equals lexicographic order for techniques that
  only see one number (see the class docstring for the precision it keeps).
* :class:`WeightedSum`: Bruel et al., "Autotuning high-level synthesis for
  FPGAs using OpenTuner and LegUp", ReConFig 2017: the weighted normalized
  sum  sum_i w_i * m_i / b_i  of the metrics m_i relative to a baseline
  configuration's metrics b_i (lower is better; the baseline itself scores
  sum_i w_i).
* :class:`Pareto`: several metrics; techniques get an equal-weight
  normalised sum as scalarisation, reports list the non-dominated front
  (:meth:`Pareto.front`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ensemble.errors import ObjectiveError
from ensemble.result import Result

__all__ = [
    "Lexicographic",
    "Maximize",
    "Minimize",
    "Objective",
    "Pareto",
    "WeightedSum",
    "objective_from_json",
]


def _metric(result: Result, name: str) -> float:
    v = result.metric(name)
    if v is None:
        raise ObjectiveError(
            f"objective needs metric {name!r} but run() returned a Result without it; "
            f"add it: Result(metrics={{{name!r}: ...}}) (got metrics {sorted(result.metrics)})"
        )
    if math.isnan(v):
        raise ObjectiveError(
            f"metric {name!r} is NaN; report a failure with state='FAILED'"
        )
    return float(v)


class Objective:
    """Base class: subclasses define :meth:`_scalar` and :meth:`to_json`."""

    kind = "Objective"

    def scalar(self, result: Result) -> float:
        """Number techniques minimise; ``math.inf`` when the result is not OK."""
        if not result.ok:
            return math.inf
        return self._scalar(result)

    def _scalar(self, result: Result) -> float:
        raise NotImplementedError

    def value(self, result: Result) -> float:
        """User-facing value (same as scalar unless the objective says otherwise)."""
        return self.scalar(result)

    def better(self, a: Result, b: Result) -> bool:
        """True when ``a`` is strictly better than ``b``."""
        return self.scalar(a) < self.scalar(b)

    def to_json(self) -> dict[str, Any]:
        raise NotImplementedError

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Objective) and self.to_json() == other.to_json()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.to_json()!r})"


class Minimize(Objective):
    """Minimise one metric (default ``time``)."""

    kind = "Minimize"

    def __init__(self, metric: str = "time") -> None:
        self.metric = metric

    def _scalar(self, result: Result) -> float:
        return _metric(result, self.metric)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.kind, "metric": self.metric}


class Maximize(Objective):
    """Maximise one metric; the scalar is its negation, the value the metric itself."""

    kind = "Maximize"

    def __init__(self, metric: str) -> None:
        self.metric = metric

    def _scalar(self, result: Result) -> float:
        return -_metric(result, self.metric)

    def value(self, result: Result) -> float:
        if not result.ok:
            return -math.inf
        return _metric(result, self.metric)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.kind, "metric": self.metric}


def _sub(obj: Objective | str) -> Objective:
    return Minimize(obj) if isinstance(obj, str) else obj


class Lexicographic(Objective):
    """Compare by the first objective, break ties with the next, and so on.

    ``parts`` are objectives or metric names (minimised).  :meth:`key` gives the
    exact tuple (use it, or :meth:`better`, where exact order matters);
    :meth:`scalar` gives techniques a single float: the first part's scalar
    plus a tie-breaking term from the later parts squashed into
    ``[0, 1e-9 * max(|first|, 1e-12)]``, so it can only reorder results whose
    first parts differ by less than one part in 1e9.
    """

    kind = "Lexicographic"

    def __init__(self, parts: Sequence[Objective | str]) -> None:
        if not parts:
            raise ObjectiveError(
                "Lexicographic(parts): give at least one metric or objective"
            )
        self.parts = [_sub(p) for p in parts]

    def key(self, result: Result) -> tuple[float, ...]:
        """Exact lexicographic key (compare tuples)."""
        return tuple(p.scalar(result) for p in self.parts)

    def better(self, a: Result, b: Result) -> bool:
        return self.key(a) < self.key(b)

    def _scalar(self, result: Result) -> float:
        key = self.key(result)
        head = key[0]
        if not math.isfinite(head) or len(key) == 1:
            return head
        # squash the tie-breakers into [0, 1), most significant first
        tail = 0.0
        for k in reversed(key[1:]):
            squashed = 0.5 + math.atan(k) / math.pi if math.isfinite(k) else 1.0
            tail = (squashed + tail) / 2
        return head + tail * 1e-9 * max(abs(head), 1e-12)

    def value(self, result: Result) -> float:
        return self.parts[0].value(result)

    def to_json(self) -> dict[str, Any]:
        return {"type": self.kind, "parts": [p.to_json() for p in self.parts]}


class WeightedSum(Objective):
    """Bruel et al. (ReConFig 2017) weighted normalized sum: sum w_i * m_i / baseline_i.

    ``weights`` maps metric names to weights; ``baseline`` maps the same names to
    the metrics of a baseline configuration (all non-zero).  Lower is better.
    """

    kind = "WeightedSum"

    def __init__(
        self, weights: Mapping[str, float], baseline: Mapping[str, float]
    ) -> None:
        if not weights:
            raise ObjectiveError(
                "WeightedSum(weights): give at least one metric weight"
            )
        missing = [m for m in weights if m not in baseline]
        if missing:
            raise ObjectiveError(
                f"WeightedSum(baseline): no baseline value for {missing}; "
                "give the baseline configuration's value of every weighted metric"
            )
        zero = [m for m in weights if float(baseline[m]) == 0.0]
        if zero:
            raise ObjectiveError(
                f"WeightedSum(baseline): baseline of {zero} is 0; metrics are divided by it"
            )
        self.weights = {k: float(v) for k, v in weights.items()}
        self.baseline = {k: float(baseline[k]) for k in weights}

    def _scalar(self, result: Result) -> float:
        return sum(
            w * _metric(result, m) / self.baseline[m] for m, w in self.weights.items()
        )

    def to_json(self) -> dict[str, Any]:
        return {"type": self.kind, "weights": self.weights, "baseline": self.baseline}


class Pareto(Objective):
    """Several metrics traded off; techniques see a scalarisation, reports the front.

    ``metrics`` are names (minimised) or Maximize objectives.  The scalar is the
    sum of each part's scalar divided by ``scale`` (default 1 per metric), an
    equal-weight scalarisation; :meth:`front` returns the non-dominated results.
    """

    kind = "Pareto"

    def __init__(
        self,
        metrics: Sequence[Objective | str],
        scale: Mapping[str, float] | None = None,
    ) -> None:
        if len(metrics) < 2:
            raise ObjectiveError(
                "Pareto(metrics): give at least two metrics to trade off"
            )
        self.parts = [_sub(m) for m in metrics]
        self.scale = dict(scale or {})

    def vector(self, result: Result) -> tuple[float, ...]:
        """Per-metric scalars (all minimised)."""
        return tuple(p.scalar(result) for p in self.parts)

    def _scalar(self, result: Result) -> float:
        total = 0.0
        for p, v in zip(self.parts, self.vector(result)):
            total += v / self.scale.get(getattr(p, "metric", ""), 1.0)
        return total

    def front(self, results: Sequence[Result]) -> list[int]:
        """Indices of the OK results no other OK result dominates."""
        vecs = [(i, self.vector(r)) for i, r in enumerate(results) if r.ok]
        out = []
        for i, v in vecs:
            dominated = any(
                all(a <= b for a, b in zip(w, v)) and any(a < b for a, b in zip(w, v))
                for j, w in vecs
                if j != i
            )
            if not dominated:
                out.append(i)
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "type": self.kind,
            "parts": [p.to_json() for p in self.parts],
            "scale": self.scale,
        }


def objective_from_json(d: Mapping[str, Any]) -> Objective:
    """Rebuild an objective from :meth:`Objective.to_json`."""
    kind = d.get("type")
    if kind == "Minimize":
        return Minimize(d["metric"])
    if kind == "Maximize":
        return Maximize(d["metric"])
    if kind == "Lexicographic":
        return Lexicographic([objective_from_json(p) for p in d["parts"]])
    if kind == "WeightedSum":
        return WeightedSum(d["weights"], d["baseline"])
    if kind == "Pareto":
        return Pareto([objective_from_json(p) for p in d["parts"]], d.get("scale"))
    raise ObjectiveError(
        f"objective description {dict(d)!r}: unknown type {kind!r}; known: Minimize, Maximize, "
        "Lexicographic, WeightedSum, Pareto"
    )
