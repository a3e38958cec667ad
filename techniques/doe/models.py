"""Linear models and ANOVA screening with statsmodels (steps 2, 5, 6 and 7).

Bruel et al. (CCGRID'19, thesis appendix E): step 2 picks an initial
performance model, either from domain knowledge (Eq. 3, the Laplacian's
``time_per_pixel ~ y_component_number + 1/y_component_number + ...``) or,
automated for SPAPT (Section V-B), "a linear term for each factor with two or
more levels, plus quadratic and cubic terms for factors with sufficient
levels".  Step 5 runs an ANOVA on the design's measurements and keeps the
factors whose terms have Pr(>F) below a significance level (Section IV-A,
Table II; appendix F compares the levels 0.001, 0.01 and 0.1); steps 6-7 fit
the model of the significant factors, whose minimum over the valid
configurations gives the levels to fix (step 8).

Formulas are patsy formulas (R syntax, as in the paper): ``a + I(1/b) +
C(kind)``.  The ANOVA is statsmodels' ``anova_lm`` of type II (each term
tested after all the others that do not contain it), so the verdict on a term
does not depend on where it is written in the formula; R's ``aov``, which the
paper used, is sequential (type I).  That difference is listed in docs/DOE.md.
"""

from __future__ import annotations

import math
import re
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ensemble.errors import TechniqueError
from techniques.doe.factors import Factor, frame_of

__all__ = [
    "DEGREES",
    "AnovaRow",
    "Fit",
    "Model",
    "anova",
    "auto_model",
    "drop_aliased",
    "fit",
    "model_matrix",
    "parse_formula",
    "screen",
]

#: automatic term sets, poorest first ("full" adds the inverse terms of Eq. 3)
DEGREES = ("linear", "quadratic", "cubic", "full")


@dataclass
class Model:
    """A response and its model terms, with the factors each term involves."""

    response: str
    terms: list[str]
    factors: list[Factor]

    @property
    def formula(self) -> str:
        return f"{self.response} ~ " + (" + ".join(self.terms) if self.terms else "1")

    def factors_of(self, term: str) -> list[str]:
        """Names of the factors that appear in ``term``."""
        out = []
        for f in self.factors:
            pat = re.escape(f.var) if f.var.startswith("Q(") else rf"(?<![\w.]){re.escape(f.var)}(?![\w(])"
            if re.search(pat, term):
                out.append(f.name)
        return out

    def restricted_to(self, names: Sequence[str]) -> Model:
        """The terms whose factors are all in ``names``."""
        keep = set(names)
        return Model(self.response, [t for t in self.terms if set(self.factors_of(t)) <= keep
                                     and self.factors_of(t)], [f for f in self.factors if f.name in keep])

    def width(self) -> int:
        """Number of coefficients (intercept included) before aliasing checks."""
        total = 1
        for t in self.terms:
            names = self.factors_of(t)
            cats = [f for f in self.factors if f.name in names and f.kind == "categorical"]
            w = 1
            for f in cats:
                w *= max(int(f.n_levels) - 1, 1)
            total += w
        return total


def auto_model(factors: Sequence[Factor], degree: str, response: str = "y") -> Model:
    """Section V-B's automatic model: per factor, the terms its levels allow."""
    if degree not in DEGREES:
        raise TechniqueError(f"terms={degree!r}: choose one of {DEGREES}, 'auto', or give a formula")
    terms = [t for f in factors for t in f.terms(degree)]
    return Model(response, terms, list(factors))


def _split_top(text: str) -> list[str]:
    parts, depth, cur = [], 0, []
    for ch in text:
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
        if ch == "+" and depth == 0:
            parts.append("".join(cur).strip())
            cur = []
        else:
            cur.append(ch)
    parts.append("".join(cur).strip())
    return [p for p in parts if p and p not in ("1", "0", "-1")]


def parse_formula(formula: str, factors: Sequence[Factor], response: str = "y") -> Model:
    """A user formula (``"time ~ a + I(1/b)"`` or just the right-hand side) as a Model.

    Every term must name at least one factor of the space; a misspelt name is
    refused with the list of factor names.
    """
    lhs, _, rhs = formula.rpartition("~")
    model = Model(lhs.strip() or response, _split_top(rhs), list(factors))
    if not re.fullmatch(r"[A-Za-z_]\w*", model.response):
        raise TechniqueError(f"terms={formula!r}: the response {model.response!r} must be a plain name, e.g. 'time'")
    for t in model.terms:
        if not model.factors_of(t):
            raise TechniqueError(
                f"terms={formula!r}: the term {t!r} names no factor of the space; factors: "
                f"{', '.join(f.name for f in factors)} (names that are not identifiers are written Q(\"name\"))")
    return model


def model_matrix(model: Model, configs: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, list[str], dict[str, slice]]:
    """patsy's model matrix of ``configs`` (intercept first), its column names, and term -> columns."""
    import patsy  # statsmodels' dependency: lazy

    frame = frame_of(model.factors, configs)
    rhs = " + ".join(model.terms) if model.terms else "1"
    dm = patsy.dmatrix(rhs, frame, NA_action="raise", return_type="matrix")
    info = dm.design_info
    return np.asarray(dm, dtype=float), list(info.column_names), dict(info.term_name_slices)


def drop_aliased(model: Model, x: np.ndarray, slices: Mapping[str, slice]) -> tuple[Model, list[str]]:
    """Drop the terms that the candidate set cannot separate from earlier ones (singular design).

    A term is aliased when its columns add no rank to the intercept and the
    terms before it, e.g. a level that the constraints exclude, or 1/x
    indistinguishable from x over two remaining levels.  Returns the model
    without them and their names (the report lists them).
    """
    from techniques.doe.design import code_columns

    coded = code_columns(x)
    keep_cols = list(range(slices["Intercept"].stop)) if "Intercept" in slices else []
    rank = np.linalg.matrix_rank(coded[:, keep_cols]) if keep_cols else 0
    kept, dropped = [], []
    for term in model.terms:
        name = next((k for k in slices if _same_term(k, term)), None)
        if name is None:
            dropped.append(term)
            continue
        cols = list(range(slices[name].start, slices[name].stop))
        new_rank = np.linalg.matrix_rank(coded[:, keep_cols + cols], tol=1e-8 * max(1, len(coded)))
        if new_rank == rank + len(cols):
            keep_cols += cols
            rank = new_rank
            kept.append(term)
        else:
            dropped.append(term)
    return Model(model.response, kept, model.factors), dropped


def _same_term(patsy_name: str, term: str) -> bool:
    return patsy_name.replace(" ", "") == term.replace(" ", "")


@dataclass
class AnovaRow:
    term: str
    df: float
    sum_sq: float
    f: float | None
    p: float | None


@dataclass
class Fit:
    """A fitted model: coefficients, ANOVA table, and the statsmodels result for prediction."""

    model: Model
    n: int
    coefficients: dict[str, float]
    r2: float
    anova: list[AnovaRow] = field(default_factory=list)
    result: Any = None

    def predict(self, configs: Sequence[Mapping[str, Any]]) -> np.ndarray:
        frame = frame_of(self.model.factors, configs)
        return np.asarray(self.result.predict(frame), dtype=float)


def fit(model: Model, configs: Sequence[Mapping[str, Any]], values: Sequence[float]) -> Fit:
    """Ordinary least squares of ``model`` on the measured configurations (statsmodels formula API)."""
    import statsmodels.formula.api as smf

    if len(configs) != len(values):
        raise TechniqueError(f"fit(): {len(configs)} configurations but {len(values)} values; give one value each")
    frame = frame_of(model.factors, configs, (model.response, values))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = smf.ols(model.formula, data=frame).fit()
    r2 = float(result.rsquared) if np.isfinite(result.rsquared) else float("nan")
    return Fit(model, len(values), {k: float(v) for k, v in result.params.items()}, r2, result=result)


def anova(f: Fit) -> list[AnovaRow]:
    """Type II ANOVA table (step 5); empty when no residual degree of freedom is left."""
    import statsmodels.api as sm

    if f.result.df_resid < 1 or not f.model.terms:
        return []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = sm.stats.anova_lm(f.result, typ=2)
    rows = []
    for term, r in table.iterrows():
        fv = r.get("F")
        pv = r.get("PR(>F)")
        rows.append(AnovaRow(str(term), float(r["df"]), float(r["sum_sq"]),
                             None if fv is None or not math.isfinite(fv) else float(fv),
                             None if pv is None or not math.isfinite(pv) else float(pv)))
    f.anova = rows
    return rows


def screen(model: Model, rows: Sequence[AnovaRow], alpha: float) -> tuple[list[str], list[str]]:
    """Significant terms (Pr(>F) < alpha) and the factors they involve, in model order."""
    sig_terms = [r.term for r in rows if r.term != "Residual" and r.p is not None and r.p < alpha]
    factors: list[str] = []
    for t in sig_terms:
        for name in model.factors_of(t):
            if name not in factors:
                factors.append(name)
    order = [f.name for f in model.factors]
    return sig_terms, sorted(factors, key=order.index)
