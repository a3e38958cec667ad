"""Where configurations fail: a classifier learned from the run's own outcomes.

Why: real tuning spaces hold configurations that fail (kernels that do not
compile, launches the device refuses, entries missing from a recorded
table), and users rarely know the constraints well enough to write them into
the space.  A search that does not learn them keeps paying for failures; the
replayed GPU spaces in ``--space grid`` mode are 50-62 % failures.

What it is: a probabilistic classifier P(success | x) over the space's
unit-cube view (``space.to_unit``), trained on every finished trial the
technique has seen, OK against FAILED / TIMEOUT / INVALID (and "refused",
which drivers report as FAILED with a reason).  It is built only from the
trials a technique observes, in the order it observes them, and its
prediction is a pure function of those observations, so whatever the entry
point (``ensemble.tune``, the ask/tell ``Tuner``, the apps, MPI, ``--resume``
replaying the database into :meth:`Technique.restore`) the same trials give
the same model.

Which failures count: ``states`` (default: all of FAILED, TIMEOUT, INVALID)
names the failure states that mark a region as infeasible; the others are
kept (with their state, see :attr:`FeasibilityModel.counts`) but treated as
unknown.  A technique that should not avoid "wrong output" (INVALID) regions,
because the output check is what it is tuning, passes
``states=("FAILED", "TIMEOUT")``.

Classifiers, chosen among by measurement (``scripts/bench_feasibility.py``,
docs/TECHNIQUES.md "Learning where configurations fail"; the techniques learn
the kind ``techniques.base.DEFAULT_FEASIBILITY`` names):

* ``"kernel"`` (this class's default kind): a Nadaraya-Watson vote of the observations
  with a Gaussian kernel one value step wide per parameter, shrunk towards
  the run's overall success rate by one pseudo-observation.  It is
  incremental (one O(N d) update of a candidate pool per result), so the
  Bayesian optimizer can weigh 20 000 candidates at every step for the cost
  of one distance row;
* ``"forest"``: scikit-learn's random forest classifier (Breiman 2001), 32
  trees (``trees``), refitted from scratch on every query after new data (seeded from the
  number of observations, so it too is a function of the observations);
* ``"calibrated"``: the forest, its votes mapped to probabilities by Platt
  scaling (Platt 1999) fitted on its own out-of-bag votes, refitted with it.
  Why: a forest's votes are not probabilities (Niculescu-Mizil & Caruana,
  ICML 2005); replayed searches showed that the late picks the forest gave
  0.5-0.6 failed 64-71 % of the time (docs/TECHNIQUES.md, "Calibrating the
  failure forest");
* ``"monotone"``: the calibrated forest with four more inputs per point,
  read from the observations through the order of the parameters' values:
  whether a failure lies at or below it (every ordered parameter at most
  its value, every unordered one equal), a failure at or above it, a
  success at or below it, a success at or above it.  Why: the constraints
  that make tuning configurations fail are mostly resource limits that
  grow with the parameters (threads per block, shared memory, registers:
  if a block of 32 x 32 is refused, so is every larger one), which are
  monotone in each parameter however many parameters they involve; the
  pair sums above cut only two-parameter lines.  The forest decides how
  far to trust them: where failures are not monotone the features carry
  no signal and it splits on the others.  Measured, not adopted (session
  31, docs/TECHNIQUES.md "A stricter filter for the GP beside its
  partner", candidate A): held-out log loss no better
  than the calibrated forest's on a synthetic limit on three parameters,
  and in the default's grid-mode searches fewer late failures on 2 of the
  5 replay spaces only.  An ordered parameter the limit does not involve
  makes "at or below" rare, which is one reading of why;
* ``"products"``: the calibrated forest with inputs read from the values
  themselves, for every parameter whose values are positive numbers:
  log(value), the sum and the difference of each pair of logs (the log of a
  product or a ratio), the sum of all of them, and the power of two dividing
  each value.  Why: threads per block and shared memory are products of
  block and tile sizes, and block sizes stepping by 16 are not powers of two,
  so an index sum is not the log of a product.  Measured, not adopted
  (session 32, docs/TECHNIQUES.md "TPE draws again when no candidate is
  likely to run"): better offline on a synthetic product limit, but in the
  default's grid-mode searches fewer late failures on 3 of the 5 replay
  spaces only, as with the plain forest in session 13;
* ``"gp"``: scikit-learn's Laplace-approximation GP classifier (Rasmussen &
  Williams 2006, sec. 3.4), the costliest (O(n^3) per fit).

Far from every observation each rule returns the prior: the overall success
rate of the observations (a Beta(1, 1) estimate), never 0, so a filter that
rejects below a threshold still explores the unknown.
"""

from __future__ import annotations

import itertools
import math
import warnings
from collections.abc import Iterable
from typing import Any

import numpy as np

from ensemble.errors import TechniqueError
from techniques.gaussian_process import OneBlasThread
from techniques.gp_features import twos

__all__ = ["FAILURE_STATES", "KINDS", "FeasibilityModel", "accept"]

#: the states a failed trial carries (ensemble.result.TrialState): all count as failures by default
FAILURE_STATES: tuple[str, ...] = ("FAILED", "TIMEOUT", "INVALID")
#: the classifier kinds
KINDS: tuple[str, ...] = ("kernel", "forest", "calibrated", "monotone", "products", "gp")
#: the forest kinds (scikit-learn's random forest, with or without Platt scaling, the order or the value features)
FOREST_KINDS: frozenset[str] = frozenset({"forest", "calibrated", "monotone", "products"})
#: the forest kinds whose votes are Platt-scaled
CALIBRATED_KINDS: frozenset[str] = frozenset({"calibrated", "monotone", "products"})
#: parameters with more values than this get no value features (the lookup table is per value)
MAX_VALUE_TABLE = 4096


def _state(trial_state: Any) -> str:
    return str(getattr(trial_state, "value", trial_state))


class FeasibilityModel:
    """P(success | configuration) from the outcomes seen so far.

    ``steps``: the kernel's width per unit-cube dimension (one value step of
    each parameter; :meth:`for_space` computes it), ``kind``: "kernel",
    "forest", "calibrated", "monotone", "products" or "gp", ``states``: the failure states that count as
    infeasible (others are kept but ignored by the classifier).
    """

    def __init__(self, dims: int, *, steps: np.ndarray | None = None, kind: str = "kernel",
                 states: Iterable[str] = FAILURE_STATES, trees: int = 32, refit_growth: float = 1.1,
                 ordered: np.ndarray | None = None,
                 log_values: Iterable[tuple[int, np.ndarray, np.ndarray]] | None = None) -> None:
        if kind not in KINDS:
            raise TechniqueError(f"feasibility: kind must be one of {KINDS} (got {kind!r}); 'kernel' is the default")
        states = tuple(_state(s) for s in states)
        unknown = set(states) - set(FAILURE_STATES)
        if unknown or not states:
            raise TechniqueError(f"feasibility: states must be a non-empty subset of {FAILURE_STATES} "
                                 f"(got {states!r})")
        if refit_growth <= 1.0 or trees < 1:
            raise TechniqueError(f"feasibility: refit_growth must be > 1 and trees >= 1 "
                                 f"(got {refit_growth!r}, {trees!r}); the defaults are 1.1 and 32")
        self.dims = int(dims)
        self.kind = kind
        self.trees = int(trees)
        self.refit_growth = float(refit_growth)
        self.states = frozenset(states)
        width = np.full(self.dims, 0.1) if steps is None else np.asarray(steps, dtype=float)
        if width.shape != (self.dims,) or not np.all(width > 0):
            raise TechniqueError(f"feasibility: steps must be {self.dims} positive widths (got {width!r})")
        self._inv_width = 1.0 / width
        order = np.ones(self.dims, dtype=bool) if ordered is None else np.asarray(ordered, dtype=bool)
        if order.shape != (self.dims,):
            raise TechniqueError(f"feasibility: ordered must be {self.dims} booleans, one per unit-cube dimension "
                                 f"(got shape {order.shape}); FeasibilityModel.for_space computes it")
        #: per unit-cube dimension, whether its values have an order ("monotone" compares them; else equality)
        self.ordered = order
        #: per numeric coordinate ("products" reads them): (column, unit-cube centres of its values ascending,
        #: log of the values in that order); FeasibilityModel.for_space computes them
        self._log_values: list[tuple[int, np.ndarray, np.ndarray]] = []
        self._twos: list[np.ndarray] = []  # per entry of _log_values: the power of two dividing each value
        for c, centres, logs in log_values or ():
            centres, logs = np.asarray(centres, dtype=float), np.asarray(logs, dtype=float)
            if (not 0 <= int(c) < self.dims or centres.ndim != 1 or centres.shape != logs.shape or len(logs) < 2
                    or not np.all(np.isfinite(logs)) or not np.all(np.diff(centres) > 0)):
                raise TechniqueError(f"feasibility: log_values must give, per column in [0, {self.dims}), the "
                                     f"ascending unit-cube centres of at least two values and their finite logs "
                                     f"(got column {c!r}); FeasibilityModel.for_space computes them")
            self._log_values.append((int(c), centres, logs))
            self._twos.append(_twos(logs))
        self._X = np.zeros((16, self.dims))
        self._y = np.zeros(16)  # 1 = OK, 0 = counted failure
        self._n = 0
        #: outcomes seen, by state (OK, FAILED, TIMEOUT, INVALID), including those not counted
        self.counts: dict[str, int] = {}
        self._fitted_at = -1
        self._clf: Any = None
        self._platt: Any = None  # "calibrated": the vote -> probability map (Platt scaling), per fit
        #: the GP classifier's fit and predictions on one BLAS thread (small matrices; OneBlasThread)
        self._one_blas_thread = OneBlasThread()
        self._pool: np.ndarray | None = None
        self._pool_ok = np.zeros(0)
        self._pool_all = np.zeros(0)
        self._pool_p: np.ndarray | None = None  # the classifier's answers on the pool, per fit

    @classmethod
    def for_space(cls, space: Any, **options: Any) -> FeasibilityModel:
        """A model whose kernel is one value step wide in each of ``space``'s unit-cube dimensions."""
        dims = int(space.dims)
        steps = np.full(dims, 0.1)  # continuous / multi-coordinate parameters: a tenth of the cube
        ordered = np.zeros(dims, dtype=bool)
        logs: list[tuple[int, np.ndarray, np.ndarray]] = []
        col = 0
        for p in getattr(space, "params", []):
            width = int(getattr(p, "dims", 1))
            count = getattr(p, "cardinality", None) if getattr(p, "discrete", False) else None
            if width == 1 and isinstance(count, int) and count > 1 and col < dims:
                steps[col] = 1.0 / count  # the unit-cube distance between neighbouring values
                table = _log_table(p, count) if options.get("kind") == "products" else None
                if table is not None:  # only the "products" kind reads them: no per-value work for the others
                    logs.append((col, *table))
            if width == 1 and col < dims:
                ordered[col] = _has_order(p)
            col += width
        if options.get("kind") == "products":
            options.setdefault("log_values", logs)
        return cls(dims, steps=steps, ordered=ordered, **options)

    # -- data ----------------------------------------------------------------
    @property
    def observations(self) -> int:
        """Outcomes the classifier learns from (OK plus counted failures)."""
        return self._n

    @property
    def failures(self) -> int:
        return int(self._n - self._y[: self._n].sum())

    def add(self, x: np.ndarray, state: Any) -> None:
        """Learn one outcome at unit-cube point ``x``."""
        s = _state(state)
        self.counts[s] = self.counts.get(s, 0) + 1
        if s != "OK" and s not in self.states:
            return
        if self._n == len(self._y):
            self._X = np.vstack([self._X, np.zeros_like(self._X)])
            self._y = np.concatenate([self._y, np.zeros_like(self._y)])
        x = np.asarray(x, dtype=float).reshape(self.dims)
        ok = 1.0 if s == "OK" else 0.0
        self._X[self._n] = x
        self._y[self._n] = ok
        self._n += 1
        if self._pool is not None and self.kind == "kernel":
            w = self._weights(self._pool, x)
            self._pool_all += w
            self._pool_ok += ok * w

    def prior(self) -> float:
        """The overall success rate, Beta(1, 1)-smoothed: the answer far from every observation."""
        return float((self._y[: self._n].sum() + 1.0) / (self._n + 2.0))

    def _weights(self, P: np.ndarray, x: np.ndarray) -> np.ndarray:
        z = (P - x) * self._inv_width
        return np.exp(-0.5 * (z * z).sum(1))

    # -- prediction ----------------------------------------------------------
    def p_success(self, X: np.ndarray) -> np.ndarray:
        """P(success) at each row of ``X`` (unit-cube points)."""
        X = np.atleast_2d(np.asarray(X, dtype=float))
        if self.failures == 0:
            return np.ones(len(X))
        if self.kind == "kernel":
            return self._kernel(X)
        return self._sklearn(X)

    def _kernel(self, X: np.ndarray) -> np.ndarray:
        ok = np.zeros(len(X))
        alls = np.zeros(len(X))
        D, y = self._X[: self._n], self._y[: self._n]
        for start in range(0, len(X), 2048):  # bounded (rows x observations) temporaries
            chunk = X[start:start + 2048]
            z = (chunk[:, None, :] - D[None, :, :]) * self._inv_width
            w = np.exp(-0.5 * (z * z).sum(-1))
            ok[start:start + 2048] = w @ y
            alls[start:start + 2048] = w.sum(1)
        return (ok + self.prior()) / (alls + 1.0)

    def _features(self, X: np.ndarray, m: int = 0, train: bool = False) -> np.ndarray:
        """The forest's inputs: value indices, plus sums and differences of each pair of them.

        Why pairs: tuning constraints are mostly about two parameters at a time
        (block_x * block_y <= the thread limit, a tile that must divide a
        block), which on the index view of power-of-two or ordered values is a
        line x_i +- x_j <= c.  A tree splits on one feature at a time and can
        only stair-step along such a line; with x_i + x_j as a feature it cuts
        it exactly (measured in docs/TECHNIQUES.md).  Up to 12 coordinates
        (66 pairs); beyond, the indices alone.  The "monotone" kind adds the
        four order features of the first ``m`` observations (:meth:`_order`;
        ``train``: ``X`` is those observations, each compared with the others).
        """
        if self.kind not in FOREST_KINDS:
            return X
        idx = X * self._inv_width
        if 2 <= self.dims <= 12:
            i, j = np.triu_indices(self.dims, 1)
            idx = np.hstack([idx, idx[:, i] + idx[:, j], idx[:, i] - idx[:, j]])
        if self.kind == "monotone":
            idx = np.hstack([idx, self._order(X, m, train)])
        if self.kind == "products" and self._log_values:
            idx = np.hstack([idx, self._value_features(X)])
        return idx

    def _value_features(self, X: np.ndarray) -> np.ndarray:
        """The "products" kind's inputs from the values themselves (the numeric coordinates of ``log_values``).

        Why: the limits that make tuning configurations fail are mostly
        products (threads = block_x * block_y, a tile's shared memory = the
        product of its sides and the block's) and alignments (a block size
        that is a multiple of the warp size).  Where the values are not powers
        of two (block sizes 16, 32, 48, ...) an index sum is not the log of a
        product, so such a limit is a curve the trees can only stair-step; as
        a sum of logs it is one cut.  Per row: log(value) of each numeric
        coordinate, the sum and the difference of each pair of them (up to 12
        coordinates), the sum of them all (three or more), and the exponent of
        the largest power of two dividing each integer value.
        """
        logs, twos = [], []
        for (c, centres, table), two in zip(self._log_values, self._twos, strict=True):
            mid = (centres[1:] + centres[:-1]) / 2.0
            k = np.searchsorted(mid, X[:, c])  # the nearest value's position (cells meet half-way)
            logs.append(table[k])
            twos.append(two[k])
        lv = np.column_stack(logs)
        parts = [lv]
        n = lv.shape[1]
        if 2 <= n <= 12:
            a, b = np.triu_indices(n, 1)
            parts += [lv[:, a] + lv[:, b], lv[:, a] - lv[:, b]]
        if n >= 3:
            parts.append(lv.sum(1, keepdims=True))
        parts.append(np.column_stack(twos))
        return np.hstack(parts)

    def _order(self, X: np.ndarray, m: int, train: bool) -> np.ndarray:
        """Per row of ``X``: a failure at or below it, a failure at or above it, a success at or below, at or above.

        "At or below" is every ordered coordinate at most the row's and every
        unordered one equal (``ordered``).  With ``train``, row i is
        observation i, which is not compared with itself.  Rows are taken in
        blocks, so the temporaries stay (block x observations) booleans.
        """
        D, y = self._X[:m], self._y[:m]
        out = np.zeros((len(X), 4))
        if m == 0:
            return out
        eps = 1e-9
        ordered = np.flatnonzero(self.ordered)
        unordered = np.flatnonzero(~self.ordered)
        fail = y == 0.0
        for start in range(0, len(X), 256):
            rows = X[start:start + 256]
            same = np.ones((len(rows), m), dtype=bool)
            for k in unordered:
                same &= np.abs(rows[:, k, None] - D[None, :, k]) <= eps
            below = same.copy()  # observation j at or below row r
            above = same
            for k in ordered:
                diff = D[None, :, k] - rows[:, k, None]
                below &= diff <= eps
                above &= diff >= -eps
            if train:
                r = np.arange(len(rows))
                below[r, start + r] = False
                above[r, start + r] = False
            out[start:start + 256] = np.column_stack([(below & fail).any(1), (above & fail).any(1),
                                                      (below & ~fail).any(1), (above & ~fail).any(1)])
        return out

    def _checkpoint(self) -> int:
        """How many of the observations the fitted classifier uses: the last point of a fixed schedule.

        The schedule (``refit_growth`` x the previous point, at least one more)
        depends only on the count, so the fitted model is a function of the
        observations, not of when anyone asked: a resumed run replays the
        same trials and gets the same classifier.
        """
        m = 1
        while True:
            nxt = max(m + 1, math.ceil(m * self.refit_growth))
            if nxt > self._n:
                return m
            m = nxt

    def _sklearn(self, X: np.ndarray) -> np.ndarray:
        m = self._checkpoint()
        if self._fitted_at != m:
            D, y = self._features(self._X[:m], m, train=True), self._y[:m]
            self._platt = None
            if y.min() == y.max():
                self._clf = float(y[0])
            elif self.kind in FOREST_KINDS:
                from sklearn.ensemble import RandomForestClassifier

                calibrate = self.kind in CALIBRATED_KINDS
                with warnings.catch_warnings():  # a few observations may have no out-of-bag vote: left out
                    warnings.filterwarnings("ignore", message=".*OOB.*|.*out-of-bag.*")
                    self._clf = RandomForestClassifier(n_estimators=self.trees, random_state=m, n_jobs=1,
                                                       oob_score=calibrate).fit(D, y)
                self._platt = self._fit_platt(self._clf, y) if calibrate else None
            else:
                from sklearn.exceptions import ConvergenceWarning
                from sklearn.gaussian_process import GaussianProcessClassifier
                from sklearn.gaussian_process.kernels import Matern

                kernel = 1.0 * Matern(length_scale=np.full(self.dims, 0.3), nu=2.5)
                with self._one_blas_thread(), warnings.catch_warnings():  # small: 33 s -> under 5 s on 2 cores
                    # classes that a boundary separates cleanly drive the amplitude to its bound: the
                    # probabilities are then near 0 and 1, as they should be, and the warning is not the user's
                    warnings.filterwarnings("ignore", category=ConvergenceWarning, message=".*constant_value.*")
                    self._clf = GaussianProcessClassifier(kernel=kernel, random_state=m).fit(D, y)
            self._fitted_at = m
            self._pool_p = None
        if isinstance(self._clf, float):
            p = np.full(len(X), self._clf)
        else:
            with self._one_blas_thread():
                p = self._clf.predict_proba(self._features(X, m))[:, list(self._clf.classes_).index(1.0)]
            if self._platt is not None:
                p = self._platt.predict_proba(_logit(p)[:, None])[:, 1]
        # shrink towards the prior by one pseudo-observation, as the kernel rule does: never exactly 0
        return np.clip(p, 0.0, 1.0) * (m / (m + 1.0)) + self.prior() / (m + 1.0)

    @staticmethod
    def _fit_platt(forest: Any, y: np.ndarray) -> Any:
        """Platt's map from the forest's vote to P(success), fitted on its out-of-bag votes (None: too few).

        Out-of-bag votes are the forest's answers on data it did not train on,
        so the map corrects the votes the search will see on new candidates.
        """
        from sklearn.linear_model import LogisticRegression

        oob = forest.oob_decision_function_[:, list(forest.classes_).index(1.0)]
        ok = np.isfinite(oob)
        if ok.sum() < 20 or len(set(y[ok].tolist())) < 2:
            return None
        return LogisticRegression(C=1e4).fit(_logit(oob[ok])[:, None], y[ok])

    # -- a fixed candidate pool, updated incrementally ------------------------
    def set_pool(self, P: np.ndarray) -> None:
        """Keep running kernel sums for the candidate pool ``P`` (kernel kind: O(N d) per new outcome)."""
        self._pool = np.asarray(P, dtype=float)
        self._pool_ok = np.zeros(len(self._pool))
        self._pool_all = np.zeros(len(self._pool))
        if self.kind == "kernel" and self._n:
            D, y = self._X[: self._n], self._y[: self._n]
            for start in range(0, len(self._pool), 2048):
                chunk = self._pool[start:start + 2048]
                z = (chunk[:, None, :] - D[None, :, :]) * self._inv_width
                w = np.exp(-0.5 * (z * z).sum(-1))
                self._pool_ok[start:start + 2048] = w @ y
                self._pool_all[start:start + 2048] = w.sum(1)
        self._pool_p = None

    def pool_p_success(self, idx: np.ndarray | None = None) -> np.ndarray:
        """P(success) at the pool's rows ``idx`` (all rows when None)."""
        if self._pool is None:
            raise TechniqueError("feasibility: pool_p_success() before set_pool(); call set_pool(candidates) first")
        rows = np.arange(len(self._pool)) if idx is None else np.asarray(idx)
        if self.failures == 0:
            return np.ones(len(rows))
        if self.kind != "kernel":
            if self._fitted_at != self._checkpoint() or self._pool_p is None:
                self._pool_p = self.p_success(self._pool)
            return self._pool_p[rows]
        return (self._pool_ok[rows] + self.prior()) / (self._pool_all[rows] + 1.0)

    def state_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "observations": self._n, "failures": self.failures,
                "counts": dict(sorted(self.counts.items())),
                "prior": round(self.prior(), 4) if self._n else None}


def _has_order(param: Any) -> bool:
    """Whether a one-coordinate parameter's index order is an order of its values (numbers, ascending).

    Integers, powers of two and floats have one; an Enum has one when its
    values are numbers (not booleans) listed in ascending order, as a
    recorded space's are; booleans, strings and permutations do not.
    """
    kind = getattr(param, "kind", None)
    if kind in ("Integer", "LogInteger", "PowerOfTwo", "Float", "LogFloat") or not getattr(param, "discrete", True):
        return True
    if kind != "Enum" or not callable(getattr(param, "values", None)):
        return False  # Boolean, Permutation, anything unknown: compared by equality
    vals = param.values()
    numeric = all(isinstance(v, (int, float, np.integer, np.floating)) and not isinstance(v, (bool, np.bool_))
                  for v in vals)
    return numeric and all(a < b for a, b in itertools.pairwise(vals))


def _log_table(param: Any, count: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(unit-cube centres, log of the values), both ascending by centre, for a discrete one-coordinate
    parameter whose values are all positive numbers; None otherwise (booleans, strings, a zero, too many)."""
    if count > MAX_VALUE_TABLE or not callable(getattr(param, "values", None)):
        return None
    try:
        values = list(param.values())
        centres = np.array([float(param.to_unit(v)[0]) for v in values])
    except Exception:  # noqa: BLE001 - a parameter that cannot list its values gets no value feature
        return None
    if len(values) != count or any(isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, float, np.integer,
                                                                                           np.floating))
                                   for v in values):
        return None
    arr = np.asarray(values, dtype=float)
    if not np.all(np.isfinite(arr)) or not np.all(arr > 0):
        return None
    order = np.argsort(centres, kind="stable")
    if not np.all(np.diff(centres[order]) > 0):
        return None
    return centres[order], np.log2(arr[order])


def _twos(logs: np.ndarray) -> np.ndarray:
    """Per value (given as log2): the exponent of the largest power of two dividing it; 0 if not an integer."""
    out = np.zeros(len(logs))
    for k, lg in enumerate(logs):
        v = 2.0 ** float(lg)
        n = round(v)
        if n > 0 and abs(v - n) <= 1e-6 * max(1.0, v):
            out[k] = min(twos(n), 62)
    return out


def _logit(p: np.ndarray) -> np.ndarray:
    """log(p / (1 - p)) with p kept in [0.01, 0.99] (a vote of 0 or 1 is not certainty)."""
    p = np.clip(np.asarray(p, dtype=float), 0.01, 0.99)
    return np.log(p / (1.0 - p))


def accept(p: float, threshold: float, floor: float, u: float) -> bool:
    """Whether a filter lets a candidate with success probability ``p`` through.

    Above ``threshold`` always; below it with probability ``floor``, so that a
    wrong model cannot shut a region (and a valid optimum next to the failure
    boundary) out forever: it only makes the search pay for it less often.
    """
    if not math.isfinite(p):
        return True
    return p >= threshold or u < floor
