"""Gaussian-process numerics for :mod:`techniques.bayes_opt` (NumPy/SciPy only).

Why a module of its own: the technique decides *what* to evaluate; this file
only does linear algebra, and its fast incremental path is tested against a
from-scratch solve (tests/techniques/test_bayes_opt.py), as STYLE.md asks.

* Kernel: Matern 5/2 with one length scale per input dimension (ARD), the
  choice of Snoek, Larochelle & Adams, "Practical Bayesian optimization of
  machine learning algorithms" (NIPS 2012), plus a signal variance and a
  Gaussian noise variance (run times are measured, hence noisy).
* Hyperparameters: maximum of the log marginal likelihood with its analytic
  gradient (Rasmussen & Williams, "Gaussian Processes for Machine Learning",
  MIT Press 2006, eqs. 2.30 and 5.9), L-BFGS-B in log space within bounds.
* Posterior over a fixed candidate pool, updated in O(m N) per added point
  (m observations, N candidates): with ``K = L L^T`` the pool's predictive
  variance is ``s2 - colsum(V^2)`` where ``V = L^{-1} K(X, pool)``; a new
  point appends one row to ``L`` and one row to ``V`` (the bordered Cholesky
  update), so a refit of the whole pool, O(m^2 N), is needed only when the
  hyperparameters change.  Targets enter only through ``z = L^{-1} t``,
  so replacing a kriging-believer fantasy by the measured value costs one
  triangular solve.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import numpy as np
from scipy.linalg import cho_solve, solve_triangular
from scipy.optimize import minimize

__all__ = ["LENGTHSCALE_PRIORS", "GPHyper", "OneBlasThread", "PoolPosterior", "fit_hyperparameters",
           "fit_hyperparameters_steps", "matern52", "neg_log_marginal_likelihood", "neg_log_posterior"]

_SQRT5 = math.sqrt(5.0)
#: added to the diagonal for numerical safety (relative to a standardized target)
JITTER = 1e-8
# log-space bounds: length scales on the unit cube, signal variance of a standardized target, noise variance
_LS_BOUNDS = (math.log(1e-2), math.log(20.0))
_S2_BOUNDS = (math.log(5e-2), math.log(20.0))
_NOISE_BOUNDS = (math.log(1e-6), math.log(1.0))


@dataclass(frozen=True)
class GPHyper:
    """Length scales (one per dimension), signal variance, noise variance."""

    lengthscales: np.ndarray
    signal: float
    noise: float

    def to_theta(self) -> np.ndarray:
        return np.concatenate([np.log(self.lengthscales), [math.log(self.signal), math.log(self.noise)]])

    @classmethod
    def from_theta(cls, theta: np.ndarray) -> GPHyper:
        theta = np.asarray(theta, dtype=float)
        return cls(np.exp(theta[:-2]), float(math.exp(theta[-2])), float(math.exp(theta[-1])))

    @classmethod
    def default(cls, dims: int) -> GPHyper:
        """Start point: length scale 0.5 of the unit cube, unit signal, small noise."""
        return cls(np.full(dims, 0.5), 1.0, 1e-3)


def _sqdist(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Squared Euclidean distances between rows (already scaled); no (m, N, d) temporary."""
    d2 = (a * a).sum(1)[:, None] + (b * b).sum(1)[None, :] - 2.0 * (a @ b.T)
    return np.maximum(d2, 0.0)


def matern52(a: np.ndarray, b: np.ndarray, lengthscales: np.ndarray, signal: float) -> np.ndarray:
    """Matern 5/2 covariance ``s2 (1 + sqrt5 r + 5 r^2 / 3) exp(-sqrt5 r)`` (R&W eq. 4.17)."""
    r = np.sqrt(_sqdist(a / lengthscales, b / lengthscales))
    return signal * (1.0 + _SQRT5 * r + (5.0 / 3.0) * r * r) * np.exp(-_SQRT5 * r)


def neg_log_marginal_likelihood(theta: np.ndarray, X: np.ndarray, y: np.ndarray) -> tuple[float, np.ndarray]:
    """``-log p(y | X, theta)`` and its gradient in ``theta`` (log length scales, log s2, log noise)."""
    hyp = GPHyper.from_theta(theta)
    n = X.shape[0]
    ls = hyp.lengthscales
    Xs = X / ls
    r = np.sqrt(_sqdist(Xs, Xs))
    e = np.exp(-_SQRT5 * r)
    Kf = hyp.signal * (1.0 + _SQRT5 * r + (5.0 / 3.0) * r * r) * e
    K = Kf + (hyp.noise + JITTER) * np.eye(n)
    try:
        L = np.linalg.cholesky(K)
    except np.linalg.LinAlgError:
        return 1e25, np.zeros_like(theta)
    alpha = cho_solve((L, True), y)
    nll = 0.5 * float(y @ alpha) + float(np.log(np.diag(L)).sum()) + 0.5 * n * math.log(2.0 * math.pi)
    W = np.outer(alpha, alpha) - cho_solve((L, True), np.eye(n))  # alpha alpha^T - K^-1
    # d Kf / d log l_k = s2 (5/3) (1 + sqrt5 r) exp(-sqrt5 r) * (x_k - x'_k)^2 / l_k^2
    WA = W * (hyp.signal * (5.0 / 3.0) * (1.0 + _SQRT5 * r) * e)
    grad = np.empty_like(theta)
    for k in range(X.shape[1]):
        diff = Xs[:, k][:, None] - Xs[:, k][None, :]
        grad[k] = -0.5 * float((WA * diff * diff).sum())
    grad[-2] = -0.5 * float((W * Kf).sum())
    grad[-1] = -0.5 * float(np.trace(W)) * hyp.noise
    return nll, grad


#: priors on the length scales for a MAP fit instead of maximum likelihood (None): "gamma" is Gamma(3, 6) on each
#: length scale (shape 3, rate 6: mode 1/3, mean 1/2 of the unit cube; the long-standing default of GPyTorch /
#: BoTorch's SingleTaskGP); "dimension" is log-normal with median exp(sqrt2) sqrt(d) and log-sd sqrt3, d the inputs
#: (Hvarfner, Hellsten & Nardi, "Vanilla Bayesian optimization performs great in high dimensions", ICML 2024)
LENGTHSCALE_PRIORS: tuple[str | None, ...] = (None, "gamma", "dimension")
_GAMMA_SHAPE, _GAMMA_RATE = 3.0, 6.0


def _log_prior_penalty(theta: np.ndarray, prior: str | None) -> tuple[float, np.ndarray]:
    """``-log p(length scales)`` (up to a constant) and its gradient in ``theta``; zero for ``prior=None``.

    The density is taken in the length scale itself, evaluated at exp(theta) (no Jacobian term), as GPyTorch
    does for its priors on constrained parameters.
    """
    grad = np.zeros_like(theta)
    if prior is None:
        return 0.0, grad
    t = theta[:-2]
    if prior == "gamma":
        ls = np.exp(t)
        grad[:-2] = -(_GAMMA_SHAPE - 1.0) + _GAMMA_RATE * ls
        return float((-(_GAMMA_SHAPE - 1.0) * t + _GAMMA_RATE * ls).sum()), grad
    if prior == "dimension":
        mu, var = math.sqrt(2.0) + 0.5 * math.log(max(t.size, 1)), 3.0
        grad[:-2] = (t - mu) / var
        return float(((t - mu) ** 2).sum() / (2.0 * var)), grad
    raise ValueError(f"prior={prior!r}; choose one of {LENGTHSCALE_PRIORS}")


def neg_log_posterior(theta: np.ndarray, X: np.ndarray, y: np.ndarray,
                      prior: str | None = None) -> tuple[float, np.ndarray]:
    """:func:`neg_log_marginal_likelihood` plus ``-log`` of the length-scale ``prior`` (a MAP fit), with gradient."""
    nll, grad = neg_log_marginal_likelihood(theta, X, y)
    if prior is None or nll >= 1e25:
        return nll, grad
    pen, pgrad = _log_prior_penalty(theta, prior)
    return nll + pen, grad + pgrad


class OneBlasThread:
    """A context factory: the linear algebra inside runs on one BLAS thread.

    The matrices of these GPs are small (tens to a few hundred rows); a
    multi-threaded OpenBLAS spends more time synchronising than computing,
    and on a busy machine, or with parallel tuner processes, it
    oversubscribes the cores (a 609-evaluation BayesOpt replay: 78 s against
    7 s on the 2-core box; DLMT's model rest: 5.7 ms per 60-row solve while
    another process ran).  threadpoolctl ships with scikit-learn; without it
    nothing is limited.  The controller (which scans the loaded libraries,
    about 5 ms) is made once per instance, not per use.
    """

    def __init__(self) -> None:
        self._controller: Any = None
        self._tried = False

    def __call__(self) -> Any:
        if not self._tried:
            self._tried = True
            try:
                from threadpoolctl import ThreadpoolController
                self._controller = ThreadpoolController()
            except ImportError:  # pragma: no cover - optional
                self._controller = None
        if self._controller is None:
            return contextlib.nullcontext()
        return self._controller.limit(limits=1, user_api="blas")


def fit_hyperparameters(X: np.ndarray, y: np.ndarray, rng: np.random.Generator, *,
                        start: GPHyper | None = None, restarts: int = 1, maxiter: int = 50,
                        prior: str | None = None) -> GPHyper:
    """Maximise the log marginal likelihood (times the length-scale ``prior``, if any) from ``start`` and
    ``restarts`` random starts (L-BFGS-B)."""
    dims = X.shape[1]
    bounds = [_LS_BOUNDS] * dims + [_S2_BOUNDS, _NOISE_BOUNDS]
    starts = [(start or GPHyper.default(dims)).to_theta()]
    for _ in range(max(0, int(restarts))):
        # random length scales log-uniform in [0.1, 2] (a tenth of the cube to twice it), unit signal
        starts.append(np.concatenate([rng.uniform(math.log(0.1), math.log(2.0), dims), [0.0, math.log(1e-3)]]))
    best_theta, best_f = starts[0], math.inf
    for theta0 in starts:
        theta0 = np.clip(theta0, [b[0] for b in bounds], [b[1] for b in bounds])
        res = minimize(neg_log_posterior, theta0, args=(X, y, prior), jac=True, method="L-BFGS-B",
                       bounds=bounds, options={"maxiter": int(maxiter)})
        if np.isfinite(res.fun) and res.fun < best_f:
            best_theta, best_f = res.x, float(res.fun)
    return GPHyper.from_theta(best_theta)


def fit_hyperparameters_steps(X: np.ndarray, y: np.ndarray, rng: np.random.Generator, *,
                              start: GPHyper | None = None, restarts: int = 1, maxiter: int = 50,
                              chunk: int = 10, prior: str | None = None) -> Iterator[GPHyper | None]:
    """:func:`fit_hyperparameters` in steps of at most ``chunk`` L-BFGS-B iterations; yields None between
    steps and the fitted hyperparameters last.

    Each step restarts L-BFGS-B from where the last one stopped (its curvature
    memory is lost, so the path differs slightly from one uninterrupted run);
    a start ends when it converges or has run ``maxiter`` iterations.  The
    random starts are drawn up front, as in :func:`fit_hyperparameters`.
    """
    dims = X.shape[1]
    bounds = [_LS_BOUNDS] * dims + [_S2_BOUNDS, _NOISE_BOUNDS]
    starts = [(start or GPHyper.default(dims)).to_theta()]
    for _ in range(max(0, int(restarts))):
        starts.append(np.concatenate([rng.uniform(math.log(0.1), math.log(2.0), dims), [0.0, math.log(1e-3)]]))
    best_theta, best_f = starts[0], math.inf
    lo, hi = [b[0] for b in bounds], [b[1] for b in bounds]
    for theta in starts:
        theta, used, fun = np.clip(theta, lo, hi), 0, math.inf
        while used < maxiter:
            it = min(int(chunk), int(maxiter) - used)
            res = minimize(neg_log_posterior, theta, args=(X, y, prior), jac=True, method="L-BFGS-B",
                           bounds=bounds, options={"maxiter": it})
            used += max(int(res.nit), 1)
            if np.isfinite(res.fun):
                theta, fun = res.x, float(res.fun)
            if res.status != 1 or used >= maxiter:  # converged (or failed): this start is done
                break
            yield None
        if fun < best_f:
            best_theta, best_f = theta, fun
        yield None
    yield GPHyper.from_theta(best_theta)


class PoolPosterior:
    """GP posterior over a fixed candidate pool, grown one observation at a time.

    ``add(x, t)`` appends an observation (bordered Cholesky update, O(m N));
    ``set_target(i, t)`` changes a target (a fantasy replaced by its
    measurement); ``predict()`` returns the latent mean and variance at every
    pool point (O(m N)); ``set_pool`` recomputes the pool rows (O(m^2 N)).
    """

    def __init__(self, hyper: GPHyper, pool: np.ndarray) -> None:
        self.hyper = hyper
        self.dims = pool.shape[1]
        self.m = 0
        self._cap = 64
        self._X = np.zeros((self._cap, self.dims))
        self._L = np.zeros((self._cap, self._cap))
        self._t = np.zeros(self._cap)
        # z = L^{-1} t, kept up to date one row at a time (O(m) per add) and valid for rows < _z_ok:
        # the mean at every pool point is then z @ V, with no O(m^2) solve per prediction
        self._z = np.zeros(self._cap)
        self._z_ok = 0
        self._pool = np.asarray(pool, dtype=float)
        self._V = np.zeros((self._cap, len(self._pool)))
        self._q = np.zeros(len(self._pool))  # colsum(V^2)

    @classmethod
    def _sized(cls, hyper: GPHyper, pool: np.ndarray, m: int) -> tuple[PoolPosterior, int]:
        """An empty posterior whose arrays already hold ``m`` observations (the capacity doubled up to it)."""
        post = cls(hyper, pool)
        while post._cap < m:
            post._cap *= 2
        cap = post._cap
        post._X = np.zeros((cap, post.dims))
        post._L = np.zeros((cap, cap))
        post._t = np.zeros(cap)
        post._z = np.zeros(cap)
        post._V = np.zeros((cap, len(post._pool)))
        return post, m

    @classmethod
    def from_data(cls, hyper: GPHyper, X: np.ndarray, targets: np.ndarray, pool: np.ndarray) -> PoolPosterior:
        """All observations at once: one Cholesky and one triangular solve (BLAS 3) instead of m updates."""
        post, m = cls._sized(hyper, pool, len(X))
        if m:
            K = post._k(X, X) + (hyper.noise + JITTER) * np.eye(m)
            post._L[:m, :m] = np.linalg.cholesky(K)
            post._X[:m] = X
            post._t[:m] = targets
            post.m = m
            post._V[:m] = solve_triangular(post._L[:m, :m], post._k(X, post._pool), lower=True)
            post._q = (post._V[:m] ** 2).sum(0)
        return post

    @classmethod
    def build_steps(cls, hyper: GPHyper, X: np.ndarray, targets: np.ndarray, pool: np.ndarray,
                    step_flops: float = 1e8) -> Iterator[PoolPosterior | None]:
        """:meth:`from_data` in steps: yields None after each bounded piece of work, the posterior last.

        Why: the O(m^3 + m^2 N) rebuild after a refit is one burst (0.4 s at
        1250 observations and 2100 candidates on the development VM) that,
        under many workers, holds every worker up.  Here the Cholesky is one
        step and the pool's ``V`` is computed in column blocks of about
        ``step_flops`` each; the caller advances one step per result, so the
        work is spread and what is computed does not depend on the timing.
        The result equals ``from_data``'s (the same solves, by column blocks).
        """
        post, m = cls._sized(hyper, pool, len(X))
        if m:
            K = post._k(X, X) + (hyper.noise + JITTER) * np.eye(m)
            L = np.linalg.cholesky(K)
            post._L[:m, :m] = L
            post._X[:m] = X
            post._t[:m] = targets
            post.m = m
            yield None
            n = len(post._pool)
            width = max(16, int(step_flops // max(m * m, 1)))
            for a in range(0, n, width):
                b = min(n, a + width)
                post._V[:m, a:b] = solve_triangular(L, post._k(X, post._pool[a:b]), lower=True, check_finite=False)
                if b < n:
                    yield None
            post._q = (post._V[:m] ** 2).sum(0)
        yield post

    def _grow(self) -> None:
        cap = 2 * self._cap
        for name, shape in (("_X", (cap, self.dims)), ("_L", (cap, cap)), ("_V", (cap, len(self._pool)))):
            new = np.zeros(shape)
            old = getattr(self, name)
            new[: old.shape[0], : old.shape[1]] = old
            setattr(self, name, new)
        t, z = np.zeros(cap), np.zeros(cap)
        t[: self._cap] = self._t
        z[: self._cap] = self._z
        self._t, self._z, self._cap = t, z, cap

    def _k(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return matern52(a, b, self.hyper.lengthscales, self.hyper.signal)

    def add(self, x: np.ndarray, target: float, col: int | None = None) -> int:
        """Append an observation at ``x``; returns its row.

        ``col``: the pool column ``x`` is (a candidate picked or measured): its
        ``L^{-1} k(X, x)`` is then column ``col`` of ``V``, already kept, so the
        update needs no O(m^2) triangular solve (which on a slice of the
        preallocated ``L`` also copied it: 5 ms of a 5 ms update at 1250
        observations).
        """
        if self.m == self._cap:
            self._grow()
        m = self.m
        x = np.asarray(x, dtype=float).reshape(1, -1)
        kxx = self.hyper.signal + self.hyper.noise + JITTER
        if m:
            if col is not None:
                ell = self._V[:m, col].copy()
            else:
                k = self._k(self._X[:m], x)[:, 0]
                ell = solve_triangular(self._L[:m, :m], k, lower=True, check_finite=False)
            diag = math.sqrt(max(kxx - float(ell @ ell), JITTER))
            self._L[m, :m] = ell
            row = (self._k(x, self._pool)[0] - ell @ self._V[:m]) / diag
        else:
            diag = math.sqrt(kxx)
            row = self._k(x, self._pool)[0] / diag
        self._L[m, m] = diag
        self._V[m] = row
        self._q += row * row
        self._X[m] = x[0]
        self._t[m] = target
        if self._z_ok == m:  # forward substitution of the new row only
            self._z[m] = (target - (float(self._L[m, :m] @ self._z[:m]) if m else 0.0)) / diag
            self._z_ok = m + 1
        self.m += 1
        return m

    def add_block(self, X: np.ndarray, targets: np.ndarray, cols: np.ndarray | None = None) -> int:
        """Append ``p`` observations at once (block bordered Cholesky, BLAS 3); returns the first new row.

        The same posterior as ``p`` calls of :meth:`add`, in O(p m N) as one
        matrix product instead of ``p`` matrix-vector ones.  ``cols``: the
        pool columns of the rows of ``X`` where they are pool points (-1 where not).
        """
        X = np.asarray(X, dtype=float).reshape(-1, self.dims)
        p = len(X)
        first = self.m
        if p == 0:
            return first
        while self.m + p > self._cap:
            self._grow()
        m = self.m
        noise = self.hyper.noise + JITTER
        if m:
            A = np.empty((m, p))
            known = np.zeros(p, dtype=bool) if cols is None else np.asarray(cols) >= 0
            if known.any():
                A[:, known] = self._V[:m, np.asarray(cols)[known]]
            if (~known).any():
                A[:, ~known] = solve_triangular(self._L[:m, :m], self._k(self._X[:m], X[~known]), lower=True,
                                                check_finite=False)
            S = self._k(X, X) + noise * np.eye(p) - A.T @ A
            B = self._k(X, self._pool) - A.T @ self._V[:m]
        else:
            A = np.zeros((0, p))
            S = self._k(X, X) + noise * np.eye(p)
            B = self._k(X, self._pool)
        S = 0.5 * (S + S.T)
        try:
            L22 = np.linalg.cholesky(S)
        except np.linalg.LinAlgError:  # numerically not positive definite: one row at a time, as add does
            for j in range(p):
                self.add(X[j], float(targets[j]), None if cols is None or cols[j] < 0 else int(cols[j]))
            return first
        rows = solve_triangular(L22, B, lower=True, check_finite=False)
        self._L[m:m + p, :m] = A.T
        self._L[m:m + p, m:m + p] = L22
        self._V[m:m + p] = rows
        self._q += (rows * rows).sum(0)
        self._X[m:m + p] = X
        self._t[m:m + p] = targets
        if self._z_ok == m:
            rhs = np.asarray(targets, dtype=float) - (A.T @ self._z[:m] if m else 0.0)
            self._z[m:m + p] = solve_triangular(L22, rhs, lower=True, check_finite=False)
            self._z_ok = m + p
        self.m += p
        return first

    def extend_pool(self, pool: np.ndarray) -> None:
        """Append candidates to the pool: their ``V`` columns only, O(m^2 p) for ``p`` new ones."""
        pool = np.asarray(pool, dtype=float).reshape(-1, self.dims)
        if not len(pool):
            return
        cols = np.zeros((self._cap, len(pool)))
        if self.m:
            cols[: self.m] = solve_triangular(self._L[: self.m, : self.m], self._k(self._X[: self.m], pool),
                                              lower=True, check_finite=False)
        self._pool = np.vstack([self._pool, pool])
        self._V = np.hstack([self._V, cols])
        self._q = np.concatenate([self._q, (cols[: self.m] ** 2).sum(0)])

    def set_target(self, row: int, target: float) -> None:
        self._t[row] = target
        self._z_ok = min(self._z_ok, int(row))  # z changes from this row on

    def _zvec(self) -> np.ndarray:
        """``L^{-1} t`` for the m rows: only the rows from the first changed target are solved again
        (a kriging believer's fantasy replaced by its measurement is usually among the last rows)."""
        m, a = self.m, self._z_ok
        if a < m:
            L = self._L
            rhs = self._t[a:m] - (L[a:m, :a] @ self._z[:a] if a else 0.0)
            self._z[a:m] = solve_triangular(L[a:m, a:m], rhs, lower=True, check_finite=False)
            self._z_ok = m
        return self._z[:m]

    def set_pool(self, pool: np.ndarray) -> None:
        """Replace the candidate pool (recomputes V: O(m^2 N))."""
        self._pool = np.asarray(pool, dtype=float)
        self._V = np.zeros((self._cap, len(self._pool)))
        if self.m:
            self._V[: self.m] = solve_triangular(self._L[: self.m, : self.m], self._k(self._X[: self.m], self._pool),
                                                 lower=True)
        self._q = (self._V[: self.m] ** 2).sum(0)

    def predict(self) -> tuple[np.ndarray, np.ndarray]:
        """Latent mean and variance at every pool point."""
        if not self.m:
            n = len(self._pool)
            return np.zeros(n), np.full(n, self.hyper.signal)
        mu = self._zvec() @ self._V[: self.m]
        var = np.maximum(self.hyper.signal - self._q, 1e-12)
        return mu, var

    def variance(self) -> np.ndarray:
        """Latent variance at every pool point (O(N): kept up to date by ``add``)."""
        return np.maximum(self.hyper.signal - self._q, 1e-12)

    def train_mean(self) -> np.ndarray:
        """Latent posterior mean at every observation row (the targets less their fitted noise)."""
        if not self.m:
            return np.zeros(0)
        alpha = solve_triangular(self._L[: self.m, : self.m], self._zvec(), lower=True, trans="T",
                                 check_finite=False)
        return self._t[: self.m] - (self.hyper.noise + JITTER) * alpha

    def means_at(self, X: np.ndarray, cols: np.ndarray) -> np.ndarray:
        """Latent mean at the rows of ``X``; ``cols``: their pool columns (-1 where not pool points)."""
        X = np.asarray(X, dtype=float).reshape(-1, self.dims)
        cols = np.asarray(cols, dtype=int)
        out = np.zeros(len(X))
        if not self.m or not len(X):
            return out
        z = self._zvec()
        known = cols >= 0
        if known.any():
            out[known] = z @ self._V[: self.m, cols[known]]
        if (~known).any():
            A = solve_triangular(self._L[: self.m, : self.m], self._k(self._X[: self.m], X[~known]), lower=True,
                                 check_finite=False)
            out[~known] = z @ A
        return out

    def predict_at(self, x: np.ndarray) -> tuple[float, float]:
        """Latent mean and variance at one point (not necessarily in the pool)."""
        x = np.asarray(x, dtype=float).reshape(1, -1)
        if not self.m:
            return 0.0, self.hyper.signal
        k = self._k(self._X[: self.m], x)[:, 0]
        ell = solve_triangular(self._L[: self.m, : self.m], k, lower=True, check_finite=False)
        return float(ell @ self._zvec()), max(self.hyper.signal - float(ell @ ell), 1e-12)
