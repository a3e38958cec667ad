"""Tree-structured Parzen estimator (TPE): the ratio of two densities instead of a regression model.

Bergstra, Bardenet, Bengio & Kégl, "Algorithms for hyper-parameter optimization", NeurIPS 2011, Sec. 4:
split the observations at the ``gamma`` quantile of the objective into good and bad; model each with a
Parzen (kernel) density, ``l(x)`` over the good and ``g(x)`` over the bad; expected improvement is then
monotone in ``l(x) / g(x)``, so draw candidates from ``l`` and propose the one with the largest ratio.
Each parameter has its own one-dimensional density (the paper's tree of independent univariate
estimators; our spaces are flat, so the tree is one level).

Why here: issue 18 cites Optuna's TPE as the peer that closed pnpoly's last half percent, and a
density-ratio search is the model-led technique users of Optuna and Hyperopt know. It is cheap (no
matrix algebra, a few milliseconds per proposal at a thousand results) and indifferent to the scale of
the objective (only the ranking of values enters).

How it fits the project (differences from the paper, each with the reason):

* Space: the unit-cube view of the space (``space.to_unit``: a discrete parameter is an index interval,
  a permutation random keys), so every parameter kind works; candidates drawn there are repaired by
  ``decode`` into valid configurations, so nothing invalid is proposed, whatever the constraints.
  The paper draws each kind from its own prior (categorical, quantised log-uniform, ...).
* Kernels: Gaussians at each good (bad) point, bandwidth by Scott's rule per dimension
  (``std * n^(-1/5)``) clipped to [``min_bandwidth``, 1], plus a uniform prior component of weight
  ``prior_weight`` (the paper's prior, which keeps ``l`` and ``g`` positive everywhere). The paper sets the
  bandwidth from the distance to the neighbouring points; Scott's rule is the textbook choice and needs
  no sorting per dimension.
* Failures (FAILED, TIMEOUT, INVALID) join the bad set, so ``g`` learns where the space fails; and,
  as every model-led technique here (issue 18), the run's failure model ranks candidates by
  ``l/g x P(success)`` among those with ``P >= 0.5`` (all of them when none or every one is; with
  ``redraws``, a fit with none draws again first). The paper has no failures.
* Constants: ``gamma`` 0.15, the quantile the paper reports for its experiments as we read it (Hyperopt
  and most ports default to 0.25); 24 candidates per proposal (Hyperopt's count); the first ``startup``
  (10, Optuna's count) proposals uniform random, the paper's random initial jobs. None was tuned here.
* The bookkeeping (own and other techniques' results, pending proposals, the random initial design, the
  uniform fallback once every drawn candidate was measured) is ``SurrogateForest``'s, which this
  subclasses; only the model and its candidates differ.

Measured on the five replay spaces beside the default in docs/TECHNIQUES.md ("TPE"); since session 30 it
shares the default ensemble's lead with the GP (techniques.default, ``partner``).
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ensemble.errors import TechniqueError
from techniques.base import FILTER_THRESHOLD
from techniques.surrogate import SurrogateForest

__all__ = ["TPE"]


class TPE(SurrogateForest):
    """Tree-structured Parzen estimator (Bergstra et al. 2011).

    Options: ``gamma`` (quantile of the good set, 0.15), ``startup`` (uniform random proposals first, 10),
    ``candidates`` (drawn from ``l`` per fit, 24), ``prior_weight`` (weight of the uniform prior component,
    1.0), ``min_bandwidth`` (smallest kernel width on the unit scale, 0.05), ``feasible_threshold`` (the
    failure model's P(success) below which a candidate is not ranked while some candidate reaches it, 0.5 as
    BayesOpt's; docs/TECHNIQUES.md "A stricter filter for the GP beside its partner": 0.7 for TPE inside the
    default ensemble was checked there and not adopted), ``redraws`` (when none of a fit's candidates
    reaches the threshold, draw another ``candidates`` from ``l`` up to this many more times before ranking
    them all; 0, the default, ranks them all at once. Why: near a failure boundary every candidate of a
    batch can be unlikely, and ranking them all sent TPE's late picks into failures; session 32's reading,
    docs/bench_search_issue18/redraw_s32/rule.md).
    """

    name: ClassVar[str] = "TPE"
    summary: ClassVar[str] = "tree-structured Parzen estimator, l(x)/g(x) over good and bad quantiles (Bergstra et al. 2011)"

    def __init__(self, *, seed: int | None = None, gamma: float = 0.15, startup: int = 10, candidates: int = 24,
                 prior_weight: float = 1.0, min_bandwidth: float = 0.05,
                 feasible_threshold: float = FILTER_THRESHOLD, redraws: int = 0, **options: Any) -> None:
        if not 0.0 < float(gamma) < 1.0:
            raise TechniqueError(f"TPE: gamma={gamma!r} must be between 0 and 1 (the good quantile, e.g. 0.15)")
        if int(candidates) < 1 or int(startup) < 1:
            raise TechniqueError(f"TPE: candidates={candidates!r} and startup={startup!r} must be >= 1")
        if not float(prior_weight) > 0 or not 0.0 < float(min_bandwidth) <= 1.0:
            raise TechniqueError(f"TPE: prior_weight={prior_weight!r} must be > 0 and min_bandwidth="
                                 f"{min_bandwidth!r} in (0, 1]")
        if not (isinstance(feasible_threshold, (int, float)) and 0.0 < float(feasible_threshold) < 1.0):
            raise TechniqueError(f"TPE: feasible_threshold={feasible_threshold!r} must be a probability in (0, 1) "
                                 f"(e.g. {FILTER_THRESHOLD}, the default)")
        if isinstance(redraws, bool) or not isinstance(redraws, (int, np.integer)) or int(redraws) < 0:
            raise TechniqueError(f"TPE: redraws={redraws!r} must be a whole number >= 0 (extra candidate draws when "
                                 f"none is likely to run; 0, the default, ranks them all at once)")
        # refit after every result, no interleaved uniform steps: the paper's loop
        super().__init__(seed=seed, initial=int(startup), refit_fraction=0.0, random_fraction=0.0, **options)
        self.gamma = float(gamma)
        self.n_candidates = int(candidates)
        self.prior_weight = float(prior_weight)
        self.min_bandwidth = float(min_bandwidth)
        self.feasible_threshold = float(feasible_threshold)
        self.redraws = int(redraws)

    # -- the model ---------------------------------------------------------------
    def _split(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Indices of the good (the best ceil(gamma * n) finite results, at least one) and of the rest."""
        v = np.asarray(self._v, dtype=float)
        finite = np.flatnonzero(np.isfinite(v))
        n_good = max(1, min(len(finite), math.ceil(self.gamma * len(v))))
        order = finite[np.lexsort((finite, y[finite]))]  # by value, ties by arrival: reproducible
        good = order[:n_good]
        bad = np.setdiff1d(np.arange(len(v)), good)
        return good, bad

    def _bandwidths(self, pts: np.ndarray) -> np.ndarray:
        n = len(pts)
        sd = pts.std(axis=0) if n > 1 else np.ones(pts.shape[1])
        return np.clip(sd * n ** (-0.2), self.min_bandwidth, 1.0)

    def _log_density(self, pts: np.ndarray, x: np.ndarray) -> np.ndarray:
        """Sum over dimensions of log of (kernels at ``pts`` + uniform prior) at each row of ``x``."""
        n = len(pts)
        bw = self._bandwidths(pts) if n else np.ones(x.shape[1])
        w_prior = self.prior_weight / (n + self.prior_weight)
        dens = np.full(x.shape, w_prior)  # the uniform prior on [0, 1]
        if n:
            z = (x[:, None, :] - pts[None, :, :]) / bw[None, None, :]
            k = np.exp(-0.5 * z * z) / (bw[None, None, :] * math.sqrt(2.0 * math.pi))
            dens += (1.0 - w_prior) * k.mean(axis=1)
        return np.log(dens).sum(axis=1)

    def _draw(self, pts: np.ndarray, m: int) -> np.ndarray:
        """``m`` points from ``l``: per dimension, the prior or one good point's kernel, chosen independently."""
        n, dims = pts.shape
        bw = self._bandwidths(pts)
        w_prior = self.prior_weight / (n + self.prior_weight)
        comp = self.rng.integers(0, n, size=(m, dims))
        x = pts[comp, np.arange(dims)[None, :]] + self.rng.normal(0.0, 1.0, (m, dims)) * bw[None, :]
        prior = self.rng.random((m, dims)) < w_prior
        x[prior] = self.rng.random(int(prior.sum()))
        return np.clip(x, 0.0, 1.0)

    def _fit_and_rank(self) -> None:
        y = self._targets()
        self._since_fit = 0
        self._improved = False
        X = self._matrix()
        good, bad = self._split(y)
        cands: dict[str, dict[str, Any]] = {}
        p_list: list[float] = []
        for _ in range(1 + self.redraws):
            fresh: dict[str, dict[str, Any]] = {}
            for x in self._draw(X[good], self.n_candidates):
                c = self.decode(x)
                h = self.hash(c)
                if h not in cands and h not in fresh and not self._seen(h):
                    fresh[h] = c
            cands.update(fresh)
            p_list += [float(p) for p in self.p_success(list(fresh.values()))] if fresh else []
            # draw again only while no candidate is likely to run (and the model knows of failures at all)
            if self.feasibility is None or not self.feasibility.failures or any(
                    p >= self.feasible_threshold for p in p_list):
                break
        self.fits += 1
        if not cands:
            self._ranked = []
            return
        items = list(cands.items())
        p_ok = np.asarray(p_list, dtype=float)
        likely = p_ok >= self.feasible_threshold
        if likely.any() and not likely.all():  # the failure model, as BayesOpt uses it: likely successes only
            items = [hc for hc, keep in zip(items, likely) if keep]
            p_ok = p_ok[likely]
        C = np.vstack([np.asarray(self.space.to_unit(c), dtype=float) for _, c in items])
        score = self._log_density(X[good], C) - self._log_density(X[bad], C) + np.log(np.maximum(p_ok, 1e-6))
        tie = self.rng.random(len(items))
        order = np.lexsort((tie, -score))
        self._ranked = [items[int(i)] for i in order]
        self._ranked_global = []
