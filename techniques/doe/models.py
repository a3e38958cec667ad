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
C(kind)``.  The ANOVA tests each term by the F test of dropping it from the
full model (statsmodels ``OLSResults.f_test``; type II for models without
interactions), so the verdict on a term does not depend on where it is written
in the formula; R's ``aov``, which the paper used, is sequential (type I).
That difference is listed in docs/DOE.md.
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
    "TRANSFORMS",
    "AnovaRow",
    "Fit",
    "Model",
    "anova",
    "auto_model",
    "boxcox",
    "boxcox_lambda",
    "drop_aliased",
    "fit",
    "model_matrix",
    "nonconstant_variance_p",
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
            pat = rf"(?<![\w.]){re.escape(f.var)}(?![\w(])"
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
    parts: list[str] = []
    cur: list[str] = []
    depth = 0
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
                f"{', '.join(f.var for f in factors)}")
    return model


def model_matrix(model: Model, configs: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, list[str], dict[str, slice]]:
    """Model matrix of ``configs`` (intercept first), its column names, and term -> columns.

    Terms written by :meth:`Factor.terms` (every automatic model) are computed
    directly with NumPy; any other formula goes through patsy, which reads R's
    formula language as the paper's models are written.  Both give the same
    columns: treatment contrasts against a categorical factor's first level.
    """
    known = {term: f for f in model.factors for term in f.terms("full")}
    if all(term in known for term in model.terms):
        return _auto_matrix(model, known, configs)
    import patsy  # statsmodels' dependency: lazy

    frame = frame_of(model.factors, configs)
    rhs = " + ".join(model.terms) if model.terms else "1"
    dm = patsy.dmatrix(rhs, frame, NA_action="raise", return_type="matrix")
    info = dm.design_info
    slices = {_norm(k): v for k, v in info.term_name_slices.items()}
    return np.asarray(dm, dtype=float), list(info.column_names), slices


def _norm(term: str) -> str:
    return term.replace(" ", "")


def _auto_matrix(model: Model, known: Mapping[str, Factor],
                 configs: Sequence[Mapping[str, Any]]) -> tuple[np.ndarray, list[str], dict[str, slice]]:
    cols: list[np.ndarray] = [np.ones(len(configs))]
    names, slices = ["Intercept"], {"Intercept": slice(0, 1)}
    for term in model.terms:
        f = known[term]
        start = len(cols)
        if f.kind == "categorical":
            values = [c[f.name] for c in configs]
            for level in (f.levels or ())[1:]:
                cols.append(np.array([v == level for v in values], dtype=float))
                names.append(f"{term}[T.{level}]")
        else:
            x = np.array([f.encode(c[f.name]) for c in configs], dtype=float)
            power = {f.var: 1, f"I({f.var} ** 2)": 2, f"I({f.var} ** 3)": 3, f"I(1 / {f.var})": -1}[term]
            with np.errstate(divide="ignore"):
                cols.append(x ** power if power > 0 else 1.0 / x)
            names.append(term)
        slices[_norm(term)] = slice(start, len(cols))
    return np.column_stack(cols) if configs else np.zeros((0, len(cols))), names, slices


def drop_aliased(model: Model, x: np.ndarray, slices: Mapping[str, slice]) -> tuple[Model, list[str]]:
    """Drop the terms that the candidate set cannot separate from earlier ones (singular design).

    A term is aliased when its columns add no rank to the intercept and the
    terms before it, e.g. a level that the constraints exclude, or 1/x
    indistinguishable from x over two remaining levels.  Returns the model
    without them and their names (the report lists them).
    """
    from techniques.doe.design import code_columns

    coded = code_columns(x)
    gram = coded.T @ coded / max(len(coded), 1)

    def rank(cols: list[int]) -> int:
        if not cols:
            return 0
        ev = np.linalg.eigvalsh(gram[np.ix_(cols, cols)])
        return int(np.sum(ev > 1e-9 * max(1.0, float(ev.max()))))

    keep_cols = list(range(slices["Intercept"].stop)) if "Intercept" in slices else []
    current = rank(keep_cols)
    kept, dropped = [], []
    for term in model.terms:
        sl = slices.get(_norm(term))
        if sl is None:
            dropped.append(term)
            continue
        cols = list(range(sl.start, sl.stop))
        new_rank = rank(keep_cols + cols)
        if cols and new_rank == current + len(cols):
            keep_cols += cols
            current = new_rank
            kept.append(term)
        else:
            dropped.append(term)
    return Model(model.response, kept, model.factors), dropped


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
    slices: dict[str, slice] = field(default_factory=dict)

    def predict(self, configs: Sequence[Mapping[str, Any]]) -> np.ndarray:
        x = model_matrix(self.model, configs)[0]
        return np.asarray(x @ np.asarray(self.result.params, dtype=float), dtype=float)


def fit(model: Model, configs: Sequence[Mapping[str, Any]], values: Sequence[float]) -> Fit:
    """Ordinary least squares of ``model`` on the measured configurations (statsmodels OLS)."""
    import statsmodels.api as sm

    if len(configs) != len(values):
        raise TechniqueError(f"fit(): {len(configs)} configurations but {len(values)} values; give one value each")
    x, names, slices = model_matrix(model, configs)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        result = sm.OLS(np.asarray(values, dtype=float), x).fit()
        r2 = float(result.rsquared) if np.isfinite(result.rsquared) else float("nan")
    return Fit(model, len(values), {k: float(v) for k, v in zip(names, result.params)}, r2, result=result,
               slices=slices)


def anova(f: Fit) -> list[AnovaRow]:
    """ANOVA table (step 5): one F test per term, the term's coefficients all zero.

    statsmodels' ``OLSResults.f_test`` with the restriction that selects the
    term's columns: the extra sum of squares of dropping the term from the
    full model, which is the type II test for every model without interaction
    terms (all automatic models).  Empty when no residual degree of freedom is left.
    """
    res = f.result
    if res.df_resid < 1 or not f.model.terms:
        return []
    mse = float(res.ssr / res.df_resid)
    p = len(res.params)
    rows = []
    for term in f.model.terms:
        sl = f.slices.get(_norm(term))
        if sl is None or sl.stop <= sl.start:
            continue
        restriction = np.zeros((sl.stop - sl.start, p))
        for i, col in enumerate(range(sl.start, sl.stop)):
            restriction[i, col] = 1.0
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            test = res.f_test(restriction)
        fv, pv = float(np.squeeze(test.fvalue)), float(np.squeeze(test.pvalue))
        df = float(test.df_num)
        rows.append(AnovaRow(term, df, fv * df * mse if math.isfinite(fv) else float("nan"),
                             fv if math.isfinite(fv) else None, pv if math.isfinite(pv) else None))
    rows.append(AnovaRow("Residual", float(res.df_resid), float(res.ssr), None, None))
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


#: response transforms of the DLMT option ``transform`` (Section III: homoscedasticity check and correction)
TRANSFORMS = ("log", "boxcox", "checked-boxcox", "none")
#: the Box-Cox exponents searched (car's powerTransform estimates one in this range and rounds for reading)
_LAMBDAS = np.round(np.arange(-2.0, 2.0001, 0.25), 2)


def boxcox(values: Sequence[float], lam: float) -> np.ndarray:
    """The Box-Cox power transform (y^lam - 1) / lam, log y at lam = 0; increasing in y for every lam."""
    y = np.asarray(values, dtype=float)
    return np.log(y) if lam == 0 else (y ** lam - 1.0) / lam


def nonconstant_variance_p(model: Model, configs: Sequence[Mapping[str, Any]], values: Sequence[float]) -> float | None:
    """Pr of the score test for non-constant variance (Breusch-Pagan / Cook-Weisberg, R car's ``ncvTest``).

    The test regresses the squared residuals of the fitted model on its
    fitted values; a small p says the error grows (or shrinks) with the
    response, which breaks the ANOVA's homoscedasticity assumption.
    None when the fit leaves no residual degree of freedom.
    """
    f = fit(model, configs, values)
    res = f.result
    if res.df_resid < 1:
        return None
    from scipy import stats

    e2 = np.asarray(res.resid, dtype=float) ** 2
    u = e2 / (float(np.sum(e2)) / len(e2)) if np.sum(e2) > 0 else e2
    fitted = np.asarray(res.fittedvalues, dtype=float)
    if np.ptp(fitted) <= 0 or not np.all(np.isfinite(u)):
        return None
    z = np.column_stack([np.ones(len(fitted)), fitted])
    coef, *_ = np.linalg.lstsq(z, u, rcond=None)
    score = float(np.sum((z @ coef - u.mean()) ** 2)) / 2.0         # Cook & Weisberg (1983): S = SS_reg / 2
    return float(stats.chi2.sf(score, 1))


def boxcox_lambda(model: Model, configs: Sequence[Mapping[str, Any]], values: Sequence[float]) -> float:
    """The Box-Cox exponent of greatest profile likelihood for ``model`` (as car / MASS ``boxcox`` on an lm).

    With g the geometric mean of y, the scaled transform z = (y^l - 1) /
    (l g^(l-1)) (g log y at l = 0) makes residual sums of squares comparable
    across l; the log-likelihood is -n/2 log(RSS(l)).  Searched over
    -2 ... 2 in steps of 0.25 (readable exponents; the paper's tool reports
    rounded ones too).
    """
    y = np.asarray(values, dtype=float)
    x = model_matrix(model, configs)[0]
    g = float(np.exp(np.mean(np.log(y))))
    best, best_ll = 1.0, -np.inf
    for lam in _LAMBDAS:
        z = g * np.log(y) if lam == 0 else (y ** lam - 1.0) / (lam * g ** (lam - 1.0))
        coef, *_ = np.linalg.lstsq(x, z, rcond=None)
        rss = float(np.sum((z - x @ coef) ** 2))
        ll = -0.5 * len(y) * np.log(max(rss, 1e-300))
        if ll > best_ll + 1e-12:
            best, best_ll = float(lam), ll
    return best
