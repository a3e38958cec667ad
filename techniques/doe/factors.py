"""Factors and levels: how a search space's parameters enter a linear model.

Step 1 of Bruel et al.'s DoE approach (CCGRID'19, thesis appendix E,
Section III) defines the *factors* and their *levels*.  Numeric parameters
(Integer, LogInteger, PowerOfTwo, Float, numeric Enum, Boolean as 0/1) are
numeric factors: they get linear, quadratic, cubic and inverse terms as their
number of levels allows.  Enums of other values are *categorical* factors
(Section III: "must be treated differently when constructing designs ... and
analyzing results"): one ``C(...)`` term with treatment contrasts.
Permutations and parameters with a single level are not factors: they stay
free (drawn at random in designs) and never enter a model.
"""

from __future__ import annotations

import keyword
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["LOG_SPAN", "SCALES", "Factor", "factors_of", "frame_of", "term_width"]

#: names patsy gives a meaning in formulas (a data column of that name would hide it)
_RESERVED = frozenset({"C", "I", "Q", "np", "center", "standardize", "scale", "bs", "cr", "cc", "te"})


@dataclass(frozen=True)
class Factor:
    """One model factor: its parameter name, kind and levels."""

    name: str
    #: "numeric" or "categorical"
    kind: str
    #: the legal values (None for a continuous Float)
    levels: tuple[Any, ...] | None
    low: float = 0.0
    high: float = 0.0
    #: "linear" (the value itself) or "log" (log2 of the value: a numeric factor with positive levels
    #: spanning at least LOG_SPAN; ``low``/``high`` are then log2 of the extreme levels)
    scale: str = "linear"

    @property
    def var(self) -> str:
        """How the factor is written in a formula and named in the data frame.

        The parameter's name, except where it would shadow a formula function
        (``C``, ``I``, ``Q``) or a Python keyword: then the name plus ``_``.
        """
        if keyword.iskeyword(self.name) or self.name in _RESERVED:
            return self.name + "_"
        return self.name

    @property
    def n_levels(self) -> float:
        return math.inf if self.levels is None else len(self.levels)

    def encode(self, value: Any) -> Any:
        """The column value in the model's data frame."""
        if self.kind == "categorical":
            return str(value)
        if self.scale == "log":
            return math.log2(float(value))
        return float(value)  # bool -> 0.0/1.0

    def terms(self, degree: str) -> list[str]:
        """Model terms of this factor for a term set (linear / quadratic / cubic / full)."""
        v = self.var
        if self.kind == "categorical":
            levels = ", ".join(repr(str(x)) for x in self.levels or ())
            return [f"C({v}, levels=[{levels}])"]
        out = [v]
        rank = {"linear": 1, "quadratic": 2, "cubic": 3, "full": 4}[degree]
        if rank >= 2 and self.n_levels >= 3:
            out.append(f"I({v} ** 2)")
        if rank >= 3 and self.n_levels >= 4:
            out.append(f"I({v} ** 3)")
        if rank >= 4 and self.n_levels >= 3 and self.low > 0:
            out.append(f"I(1 / {v})")
        return out


def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, bool)


#: ``scale="log"``: a numeric factor enters as log2(value) when its levels are all positive and the largest
#: is at least this multiple of the smallest (two doublings)
LOG_SPAN = 4.0
SCALES = ("linear", "log")


def factors_of(space: Any, *, exclude: Sequence[str] = (), scale: str = "linear") -> list[Factor]:
    """The factors of ``space`` (numeric or categorical), in parameter order.

    Parameters with one level, Permutations and the names in ``exclude``
    (fixed factors) are left out.  ``scale="log"`` enters a numeric factor
    whose levels are positive and span at least ``LOG_SPAN`` as log2 of its
    value (Booleans never): block sizes, tile sizes and unroll factors act on
    run time by products and ratios, which a polynomial in the logs of the
    factors, with a log response, writes as sums (a power law, the form of
    Extra-P's performance model normal form).
    """
    if scale not in SCALES:
        raise ValueError(f"scale={scale!r}; choose one of {SCALES}")
    out: list[Factor] = []
    for p in space.params:
        if p.name in exclude or p.kind == "Permutation":
            continue
        if not getattr(p, "discrete", True):  # Float / LogFloat
            if p.high > p.low:
                out.append(Factor(p.name, "numeric", None, float(p.low), float(p.high)))
            continue
        values = list(p.values())
        if len(values) < 2:
            continue  # a factor with one level carries no information: not a factor
        if p.kind == "Boolean" or all(_is_number(v) for v in values) or all(isinstance(v, bool) for v in values):
            nums = [float(v) for v in values]
            lo, hi = min(nums), max(nums)
            if scale == "log" and p.kind != "Boolean" and lo > 0 and hi >= LOG_SPAN * lo:
                out.append(Factor(p.name, "numeric", tuple(values), math.log2(lo), math.log2(hi), "log"))
            else:
                out.append(Factor(p.name, "numeric", tuple(values), lo, hi))
        else:
            out.append(Factor(p.name, "categorical", tuple(values)))
    return out


def term_width(factor: Factor, term: str) -> int:
    """Model-matrix columns of one term (categorical: levels - 1)."""
    if factor.kind == "categorical" and term.startswith("C("):
        return max(int(factor.n_levels) - 1, 0)
    return 1


def frame_of(factors: Sequence[Factor], configs: Sequence[Mapping[str, Any]],
             response: tuple[str, Sequence[float]] | None = None) -> Any:
    """A pandas DataFrame of the factor columns (plus the response) for patsy / statsmodels."""
    import pandas as pd  # statsmodels' dependency: lazy, the `stats` extra

    data: dict[str, list[Any]] = {f.var: [f.encode(c[f.name]) for c in configs] for f in factors}
    if response is not None:
        data[response[0]] = [float(v) for v in response[1]]
    return pd.DataFrame(data)
