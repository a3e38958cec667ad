"""Model-based search: a random-forest surrogate with expected improvement.

Why a model: the score of Willemsen et al. (FGCS 2024) averages over the
whole budget axis, so a tuner must find good configurations early.  The
population methods of the default ensemble spend many evaluations before
their populations concentrate; a surrogate model learns from every result
at once.  This is the recipe of SMAC (Hutter, Hoos & Leyton-Brown,
"Sequential model-based optimization for general algorithm configuration",
LION 2011) applied to auto-tuning as in Willemsen, van Nieuwpoort & van
Werkhoven, "Bayesian optimization for auto-tuning GPU kernels" (PMBS 2021):

* features: the space's unit-cube view (``space.to_unit``: discrete values are
  index intervals, permutations random keys, floats their own scale), so
  every parameter kind and any constraint works;
* target: ``log`` of the objective (run times are positive and spread over
  orders of magnitude; SMAC models log run time for the same reason); when a
  value is <= 0 the raw value is used instead;
* failed configurations (value ``inf``) stay in the training set with a
  penalty, the worst finite target plus a margin, so the model learns where
  the space fails (SMAC's treatment of crashed runs);
* model: extremely randomized trees (Geurts, Ernst & Wehenkel, Machine
  Learning 2006; scikit-learn's ``ExtraTreesRegressor``), mean and spread of
  the per-tree predictions as the predictive distribution (SMAC's estimate);
* acquisition: expected improvement (Jones, Schonlau & Welch, J. Global
  Optim. 1998) over a pool of valid, not yet evaluated candidates: fresh
  uniform samples of the space plus one-step neighbours, mutations and small
  unit-cube perturbations of the best few configurations (SMAC's random +
  local-search candidates).  Only candidates the space produced (sample,
  neighbours, mutate, repair) are ever proposed, so nothing invalid is.

Exploration: a fraction (20 %) of the proposals after the initial design
are uniform random valid configurations, as SMAC interleaves them (a model
that only refines its incumbents gets stuck in a flat basin).
``explore="global"`` takes the best EI among the uniform samples instead;
it measured the same within noise (docs/bench_search_results.md).

Cost: the model is refitted when k new results have arrived since the last
fit, k growing with the data (about n/16), or at once after an improvement;
between fits, proposals come from the last EI ranking.  That keeps the mean
cost per proposal at a few milliseconds on spaces with ~10 parameters and
~1000 evaluations (measured, docs/bench_search_results.md).

All constants are generic defaults (SMAC-like), not fitted to any benchmark
space.
"""

from __future__ import annotations

import math
from typing import Any, ClassVar

import numpy as np

from ensemble.errors import InfeasibleSpaceError, TechniqueError
from ensemble.technique import Trial
from techniques.base import BaseTechnique

__all__ = ["SurrogateForest", "expected_improvement"]

# enumerate the rest of a space when it has at most this many valid points
_ENUMERATE_LIMIT = 200_000


def expected_improvement(mu: np.ndarray, sigma: np.ndarray, best: float, xi: float = 0.0) -> np.ndarray:
    """Expected improvement below ``best`` for minimisation (Jones et al. 1998).

    ``EI = (best - mu - xi) Phi(z) + sigma phi(z)`` with
    ``z = (best - mu - xi) / sigma``; where ``sigma`` is 0 it is
    ``max(best - mu - xi, 0)``.
    """
    mu = np.asarray(mu, dtype=float)
    sigma = np.asarray(sigma, dtype=float)
    imp = best - mu - xi
    out = np.maximum(imp, 0.0)
    pos = sigma > 1e-12
    if pos.any():
        s = sigma[pos]
        z = imp[pos] / s
        cdf = 0.5 * (1.0 + _erf(z / math.sqrt(2.0)))
        pdf = np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi)
        out[pos] = imp[pos] * cdf + s * pdf
    return out


def _erf(x: np.ndarray) -> np.ndarray:
    """Vectorised error function (math.erf per element; arrays here are small)."""
    return np.vectorize(math.erf, otypes=[float])(x)


class SurrogateForest(BaseTechnique):
    """SMAC-style random-forest surrogate + expected improvement over a valid candidate pool.

    Options (generic defaults): ``trees`` (32), ``initial`` (random initial
    design size; default ``dims + 2`` clipped to 5..20 and to a fifth of the
    budget), ``pool`` (uniform candidates per fit, 500), ``incumbents`` (how
    many of the best configurations get local candidates, 5), ``xi``
    (EI exploration margin in log units, 0.0), ``refit_fraction`` (refit after
    ``max(1, n * refit_fraction)`` new results, 1/16), ``random_fraction``
    (share of exploration steps, 0.2), ``explore`` ("random": a uniform sample,
    as SMAC, the default; "global": the best EI among uniform samples), ``bootstrap`` /
    ``min_leaf`` (forest settings; False / 1).
    """

    name: ClassVar[str] = "Surrogate"
    summary: ClassVar[str] = "random-forest surrogate + expected improvement (SMAC, Hutter et al. 2011)"

    def __init__(self, *, seed: int | None = None, trees: int = 32, initial: int | None = None,
                 pool: int = 500, incumbents: int = 5, xi: float = 0.0,
                 refit_fraction: float = 1.0 / 16.0, random_fraction: float = 0.2,
                 bootstrap: bool = False, min_leaf: int = 1, explore: str = "random",
                 **options: Any) -> None:
        super().__init__(seed=seed, **options)
        self.trees = max(int(trees), 2)
        self.initial = None if initial is None else max(int(initial), 1)
        self.pool = max(int(pool), 10)
        self.incumbents = max(int(incumbents), 1)
        self.xi = float(xi)
        self.refit_fraction = float(refit_fraction)
        self.random_fraction = float(random_fraction)
        if explore not in ("random", "global"):
            raise TechniqueError(f"Surrogate: explore must be 'random' or 'global', got {explore!r}")
        self.explore = explore
        self.bootstrap = bool(bootstrap)
        self.min_leaf = max(int(min_leaf), 1)

    # -- state ---------------------------------------------------------------
    def _on_bind(self) -> None:
        # every result the technique knows (own and foreign), in arrival order
        self._X: list[np.ndarray] = []
        self._Xm: np.ndarray | None = None  # self._X stacked, grown as results arrive (see _matrix)
        self._v: list[float] = []
        self._hashes: dict[str, int] = {}
        self._configs: list[dict[str, Any]] = []
        self._pending: dict[str, dict[str, Any]] = {}  # proposed, no result yet
        self._ranked: list[tuple[str, dict[str, Any]]] = []  # last EI ranking, best first
        self._ranked_global: list[tuple[str, dict[str, Any]]] = []  # same, uniform samples only
        self._uniform: set[str] = set()
        self._since_fit = 0
        self._improved = False
        self._rest: list[dict[str, Any]] | None = None
        self.fits = 0
        if self.initial is not None:
            self._n_init = self.initial
        else:
            n_init = min(20, max(5, int(self.space.dims) + 2))
            if self.budget:
                n_init = min(n_init, max(5, int(self.budget) // 5))
            self._n_init = n_init

    def _learn(self, trial: Trial) -> None:
        h = trial.config_hash
        self._pending.pop(h, None)
        if h in self._hashes:
            return
        value = float(trial.value)
        if math.isnan(value):
            value = math.inf
        self._hashes[h] = len(self._v)
        self._configs.append(dict(trial.config))
        self._X.append(np.asarray(self.space.to_unit(trial.config), dtype=float))
        self._v.append(value)
        self._since_fit += 1

    def _matrix(self) -> np.ndarray:
        """Every known result's unit-cube row, stacked; only the rows added since the last call are stacked.

        Why: stacking the n rows anew at every fit cost about 1 ms at n = 1200 (numpy's per-array
        overhead), as much as TPE's own density arithmetic; with 32 workers a proposal is due every few
        milliseconds.
        """
        have = 0 if self._Xm is None else len(self._Xm)
        if have < len(self._X):
            new = np.vstack(self._X[have:])
            self._Xm = new if self._Xm is None else np.concatenate([self._Xm, new])
        assert self._Xm is not None
        return self._Xm

    def observe(self, trial: Trial) -> None:
        improved = trial.value < self.best_value
        super().observe(trial)
        self._learn(trial)
        self._improved = self._improved or (improved and not trial.duplicate)

    def observe_foreign(self, trial: Trial) -> None:
        improved = trial.value < self.best_value
        super().observe_foreign(trial)
        self._learn(trial)
        self._improved = self._improved or improved

    def restore(self, trials: Any) -> None:
        super().restore(trials)
        for t in trials:
            self._learn(t)

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "fits": self.fits, "observations": len(self._v)}

    # -- helpers -------------------------------------------------------------
    def _seen(self, h: str) -> bool:
        return h in self.known or h in self._pending or h in self._hashes

    def _random_unseen(self) -> dict[str, Any] | None:
        """A uniform valid configuration not evaluated yet (Random's rule); None when used up."""
        if self._rest is None:
            for _ in range(64):
                config = self.random_config()
                if not self._seen(self.hash(config)):
                    return config
            count = self.space.count_valid(limit=_ENUMERATE_LIMIT)
            if count is None or count > _ENUMERATE_LIMIT:
                return self.random_config()  # huge space: a repeat is harmless (answered as duplicate)
            rest = [dict(c) for c in self.space.enumerate_valid()]
            order = self.rng.permutation(len(rest))
            self._rest = [rest[int(i)] for i in order]
        while self._rest:
            config = self._rest.pop()
            if not self._seen(self.hash(config)):
                return config
        self._exhausted = True
        return None

    def _targets(self) -> np.ndarray:
        """log values (raw when some value is <= 0); failures at worst + margin."""
        v = np.asarray(self._v, dtype=float)
        finite = np.isfinite(v)
        y = np.empty_like(v)
        if not finite.any():
            y[:] = 0.0
            return y
        fv = v[finite]
        y[finite] = np.log(fv) if fv.min() > 0 else fv
        lo, hi = float(y[finite].min()), float(y[finite].max())
        margin = max(0.25 * (hi - lo), 0.1 if fv.min() > 0 else 1e-3 * max(1.0, abs(hi)))
        y[~finite] = hi + margin
        return y

    def _candidates(self, y: np.ndarray) -> list[tuple[str, dict[str, Any]]]:
        """Valid, unseen candidates: uniform samples + local moves around the best few."""
        cands: dict[str, dict[str, Any]] = {}

        def add(config: dict[str, Any]) -> None:
            h = self.hash(config)
            if h not in cands and not self._seen(h):
                cands[h] = dict(config)

        try:
            samples = self.space.sample(self.rng, self.pool)
        except InfeasibleSpaceError:  # sampling found nothing on a nearly infeasible space: local moves remain
            samples = []
        for c in samples:
            add(c)
        self._uniform = set(cands)
        order = np.argsort(y, kind="stable")
        finite = [int(i) for i in order if math.isfinite(self._v[int(i)])][: self.incumbents]
        dims = int(self.space.dims)
        for rank, i in enumerate(finite):
            inc = self._configs[i]
            for c in self.space.neighbours(inc, self.rng):
                add(c)
            reps = 20 if rank == 0 else 8
            for _ in range(reps):
                add(self.space.mutate(inc, self.rng, rate=min(0.5, 2.0 / max(dims, 1))))
            x = self._X[i]
            for scale in (0.02, 0.05, 0.1):
                for _ in range(4 if rank == 0 else 2):
                    add(self.decode(x + self.rng.normal(0.0, scale, x.shape)))
        return list(cands.items())

    def _fit_and_rank(self) -> None:
        from sklearn.ensemble import ExtraTreesRegressor

        y = self._targets()
        cands = self._candidates(y)
        self._since_fit = 0
        self._improved = False
        if not cands:
            self._ranked = []
            return
        self.fits += 1
        X = self._matrix()
        model = ExtraTreesRegressor(n_estimators=self.trees, min_samples_leaf=self.min_leaf, max_features=1.0,
                                    bootstrap=self.bootstrap, random_state=int(self.rng.integers(2**31 - 1)), n_jobs=1)
        model.fit(X, y)
        C = np.vstack([np.asarray(self.space.to_unit(c), dtype=float) for _, c in cands])
        per_tree = np.stack([t.predict(C) for t in model.estimators_])
        mu, sigma = per_tree.mean(axis=0), per_tree.std(axis=0)
        finite = np.isfinite(np.asarray(self._v))
        best = float(y[finite].min()) if finite.any() else float(y.min())
        ei = expected_improvement(mu, sigma, best, self.xi)
        # ties (EI 0 far from the data) broken by the mean, then a random key: reproducible
        tie = self.rng.random(len(cands))
        order = np.lexsort((tie, mu, -ei))
        self._ranked = [cands[int(i)] for i in order]
        self._ranked_global = [hc for hc in self._ranked if hc[0] in self._uniform]

    def _refit_due(self) -> bool:
        n = len(self._v)
        k = max(1, int(n * self.refit_fraction))
        return self._improved or self._since_fit >= k or not self._ranked

    # -- ask -----------------------------------------------------------------
    def propose(self, n: int) -> list[dict[str, Any]]:
        self._require_bound()
        out: list[dict[str, Any]] = []
        if self._exhausted:
            return out
        observed = len(self._v)
        fitted_now = False
        while len(out) < n:
            initial = observed + len(self._pending) < self._n_init or not any(math.isfinite(v) for v in self._v)
            explore = not initial and self.random_fraction > 0 and self.rng.random() < self.random_fraction
            if initial or (explore and self.explore == "random"):
                config = self._random_unseen()
            elif explore:  # "global": the best EI among the uniform samples only (not the local moves)
                if not fitted_now and self._refit_due():
                    self._fit_and_rank()
                    fitted_now = True
                config = None
                while self._ranked_global:
                    h, c = self._ranked_global.pop(0)
                    if not self._seen(h):
                        config = c
                        break
                if config is None:
                    config = self._random_unseen()
            else:
                if not fitted_now and self._refit_due():
                    self._fit_and_rank()
                    fitted_now = True
                config = None
                while self._ranked:
                    h, c = self._ranked.pop(0)
                    if not self._seen(h):
                        config = c
                        break
                if config is None:
                    if not fitted_now:
                        self._fit_and_rank()
                        fitted_now = True
                        continue
                    config = self._random_unseen()
            if config is None:
                break
            h = self.hash(config)
            if h in self._pending and config in out:
                break
            self._pending[h] = config
            out.append(config)
        return out
