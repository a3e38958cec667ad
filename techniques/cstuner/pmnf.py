"""PMNF performance models over parameter groups (csTuner Eq. 3) and guided sampling.

Sun et al., IEEE CLUSTER 2021, Section IV-D and V-A2.  With n parameter
groups (group k holding m_k parameters), the performance model normal form
is reduced to

    f(P) = sum_{k=1..n} c_k * prod_{l=1..m_k} P_l^i * log2^j(P_l)        (Eq. 3)

one coefficient per group (parameters of a group multiply, groups add), so
the function search space is I x J whatever the number of parameters: the
paper's I = {0, 1, 2}, J = {0, 1}.  Each (i, j) is fitted with
``scipy.optimize.curve_fit`` and the one with the smallest residual standard
error (RSE = sqrt(SSR / (n - p))) is kept.  Parameter values enter as the
paper defines them (Section IV-B): positive numbers as they are, booleans and
enumerations as their 1-based index, so every log2 is defined.

Our one addition to Eq. 3, an intercept c_0, is listed in docs/CSTUNER.md.
Guided sampling keeps the candidate settings whose predicted metrics pass
per-metric thresholds; the thresholds are the quantiles that keep the
sampling ratio (10 % in the paper) of the candidates.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["PMNFModel", "fit_pmnf", "guided_sample", "holdout_rank_test", "numeric_matrix"]

I_RANGE = (0, 1, 2)
J_RANGE = (0, 1)


def numeric_matrix(configs: Sequence[Mapping[str, Any]], names: Sequence[str],
                   domains: Mapping[str, Sequence[Any]]) -> np.ndarray:
    """Rows of parameter values as Eq. 3 reads them (positive numbers, else 1-based index)."""
    cols = []
    for n in names:
        vals = list(domains[n])
        numeric = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
        if numeric and vals and min(vals) > 0:
            cols.append([float(c[n]) for c in configs])
        else:
            index = {(tuple(v) if isinstance(v, list) else v): i + 1.0 for i, v in enumerate(vals)}
            cols.append([index.get(tuple(c[n]) if isinstance(c[n], list) else c[n], 1.0) for c in configs])
    return np.asarray(cols, dtype=float).T.reshape(len(configs), len(names))


def _terms(x: np.ndarray, groups: Sequence[Sequence[int]], i: int, j: int) -> np.ndarray:
    """The n group products of Eq. 3 for rows ``x`` (columns: parameters)."""
    logs = np.log2(np.maximum(x, 1e-300))
    base = x ** i * logs ** j
    return np.stack([np.prod(base[:, list(g)], axis=1) for g in groups], axis=1)


@dataclass(frozen=True)
class PMNFModel:
    """One fitted Eq. 3 function: exponents (i, j), coefficients c_0 (intercept) .. c_n, RSE."""

    i: int
    j: int
    coef: tuple[float, ...]
    rse: float
    groups: tuple[tuple[int, ...], ...]
    #: column scales the coefficients were fitted on (keeps products of large values well conditioned)
    scale: tuple[float, ...] = ()

    def predict(self, x: np.ndarray) -> np.ndarray:
        t = _terms(np.asarray(x, dtype=float), self.groups, self.i, self.j) / np.asarray(self.scale)
        return self.coef[0] + t @ np.asarray(self.coef[1:])


def fit_pmnf(x: np.ndarray, y: Sequence[float], groups: Sequence[Sequence[int]],
             i_range: Sequence[int] = I_RANGE, j_range: Sequence[int] = J_RANGE) -> PMNFModel | None:
    """The (i, j) of Eq. 3 with the smallest RSE on (x, y), or None when none can be fitted.

    None when there are no more samples than coefficients (no residual degree
    of freedom), so the caller falls back to unguided sampling.
    """
    from scipy.optimize import curve_fit

    x = np.asarray(x, dtype=float)
    yv = np.asarray(y, dtype=float)
    ok = np.isfinite(yv)
    x, yv = x[ok], yv[ok]
    g = tuple(tuple(int(c) for c in grp) for grp in groups)
    p = len(g) + 1
    if len(yv) <= p:
        return None
    best: PMNFModel | None = None
    for i in i_range:
        for j in j_range:
            t = _terms(x, g, i, j)
            if not np.all(np.isfinite(t)):
                continue
            sc = np.max(np.abs(t), axis=0)
            sc = np.where(sc > 0, sc, 1.0)
            t = t / sc

            def f(_: Any, *c: float, t: np.ndarray = t) -> np.ndarray:
                return c[0] + t @ np.asarray(c[1:])

            # Linear in c: least squares gives curve_fit a starting point it cannot improve much on.
            design = np.hstack([np.ones((len(yv), 1)), t])
            p0 = np.linalg.lstsq(design, yv, rcond=None)[0]
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    coef, _ = curve_fit(f, np.zeros(len(yv)), yv, p0=p0, maxfev=2000)
            except (RuntimeError, ValueError, TypeError):
                coef = p0
            resid = yv - f(None, *coef)
            rse = math.sqrt(float(resid @ resid) / (len(yv) - p))
            if not math.isfinite(rse):
                continue
            if best is None or rse < best.rse - 1e-12 * abs(best.rse):
                best = PMNFModel(i, j, tuple(float(c) for c in coef), rse, g, tuple(float(v) for v in sc))
    return best


def holdout_rank_test(x: np.ndarray, y: Sequence[float], groups: Sequence[Sequence[int]],
                      rng: np.random.Generator, folds: int = 5) -> tuple[float, float]:
    """Spearman's rho of out-of-fold predictions against the data, and its one-sided p-value.

    ``folds``-fold cross-validation of :func:`fit_pmnf` (each fold predicted by
    the model fitted on the others).  Why: the guided sample keeps the
    candidates the model ranks best; a model whose held-out predictions do
    not rank the samples better than chance cuts the space blindly (measured
    in docs/CSTUNER.md: on four replay spaces the 10 % guided sample kept
    fewer of the best settings than a random 10 %).  Returns (nan, 1.0)
    when a fold cannot be fitted.
    """
    from scipy.stats import spearmanr

    x = np.asarray(x, dtype=float)
    yv = np.asarray(y, dtype=float)
    ok = np.isfinite(yv)
    x, yv = x[ok], yv[ok]
    n = len(yv)
    folds = min(folds, n)
    if folds < 2:
        return float("nan"), 1.0
    order = rng.permutation(n)
    pred = np.empty(n)
    for k in range(folds):
        test = order[k::folds]
        train = np.setdiff1d(order, test)
        model = fit_pmnf(x[train], yv[train], groups)
        if model is None:
            return float("nan"), 1.0
        pred[test] = model.predict(x[test])
    if not np.all(np.isfinite(pred)) or np.ptp(pred) == 0 or np.ptp(yv) == 0:
        return float("nan"), 1.0
    rho, p_two = spearmanr(pred, yv)
    rho = float(rho)
    if not math.isfinite(rho):
        return float("nan"), 1.0
    p = float(p_two) / 2 if rho > 0 else 1.0 - float(p_two) / 2
    return rho, p


def guided_sample(predictions: Mapping[str, np.ndarray], lower_is_better: Mapping[str, bool],
                  ratio: float) -> np.ndarray:
    """Indices of the candidates that pass every metric's threshold, about ``ratio`` of them.

    Each metric's threshold is its predicted value's quantile q on the good
    side; q grows from ``ratio`` until the candidates passing every threshold
    make up at least ``ratio`` of the pool (with one metric, q = ratio).
    """
    if not 0.0 < ratio <= 1.0:
        raise ValueError(f"ratio={ratio}: the sampling ratio must be in (0, 1], e.g. 0.1 for 10 %")
    names = list(predictions)
    n = len(next(iter(predictions.values()))) if names else 0
    if n == 0:
        return np.arange(0)
    want = max(1, math.ceil(ratio * n))
    oriented = {m: (predictions[m] if lower_is_better[m] else -predictions[m]) for m in names}
    ranks = {m: np.argsort(np.argsort(oriented[m], kind="stable"), kind="stable") for m in names}
    q = ratio
    while True:
        cut = max(1, math.ceil(q * n))
        keep = np.ones(n, dtype=bool)
        for m in names:
            keep &= ranks[m] < cut
        if keep.sum() >= want or q >= 1.0:
            idx = np.flatnonzero(keep)
            # order by the summed ranks, so callers can take the best first
            score = sum(ranks[m][idx] for m in names)
            return idx[np.argsort(score, kind="stable")]
        q = min(1.0, q * 1.25 + 1.0 / n)
