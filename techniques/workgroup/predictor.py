"""``WorkgroupPredictor``: Cummins et al.'s three prediction methods behind one object (ADAPT 2016, Section 4).

* ``method="classifier"`` (Section 4.1, Algorithm 1): a classifier trained on
  D_training = {(f(s), Omega(s))} (Eq. 4) predicts a size; an illegal one goes
  to the chosen fallback handler (``baseline``, ``random`` or ``nearest``).
* ``method="runtime"`` (Section 4.2, Algorithm 2): a regressor R(f(s), w)
  trained on (f(s), w, t) predicts the runtime of every candidate; the
  fitness is Delta(x) = 1 / x.
* ``method="speedup"`` (Section 4.3, Algorithm 2): R(f(s), w) predicts the
  relative performance t(s, baseline) / t(s, w) of w over the baseline size;
  Delta is the identity.

Algorithm 2's loop is :meth:`WorkgroupPredictor._regress`: candidates are the
sizes known from training within W_max(s), minus W_refused(s); take the
argmax of Delta(R(f(s), w)); while it is not legal, add it to W_refused(s),
drop it and take the next.  The regressor is asked once for every candidate
(its output does not change between iterations).

Inputs are plain values: a feature vector in the order the predictor was
fitted with, the scenario's W_max(s) and a callable ``is_legal(w)`` that
answers whether the size runs (a program tries it; the evaluation looks it up
in the measured data).  Bad inputs never raise from :meth:`predict`: wrong
length or non-finite features, or a W_max(s) below every training device's,
give the W_safe baseline with a message in ``Prediction.note``.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from ensemble.errors import TechniqueError
from techniques.workgroup.fallbacks import FALLBACKS, NoLegalSizeError, candidates
from techniques.workgroup.models import CLASSIFIERS, make_classifier, make_regressor
from techniques.workgroup.sizes import Size, baseline, oracle, within_max

__all__ = ["METHODS", "Prediction", "WorkgroupPredictor"]

METHODS = ("classifier", "runtime", "speedup")


@dataclass(frozen=True)
class Prediction:
    """A predicted size and how it was reached."""

    size: Size
    method: str
    first: Size | None        # the model's first answer (before fallbacks / Algorithm 2's loop)
    tries: int                # sizes tried after the first (fallback iterations)
    refused: tuple[Size, ...]  # sizes found refused on the way
    seconds: float            # prediction time (Section 7's "time" metric)
    note: str = ""            # why W_safe was used, when it was

    @property
    def used_w_safe(self) -> bool:
        return bool(self.note)


class WorkgroupPredictor:
    """Fit on scenarios, predict a work-group size for a new one."""

    def __init__(self, method: str = "speedup", *, model: str = "J48", fallback: str = "nearest",
                 seed: int = 0, guard_small_device: bool = True) -> None:
        if method not in METHODS:
            raise TechniqueError(f"WorkgroupPredictor(method={method!r}): use one of {METHODS}")
        if method == "classifier" and model not in CLASSIFIERS:
            raise TechniqueError(f"WorkgroupPredictor(model={model!r}): use one of {sorted(CLASSIFIERS)}")
        if fallback not in FALLBACKS:
            raise TechniqueError(f"WorkgroupPredictor(fallback={fallback!r}): use one of {sorted(FALLBACKS)}")
        self.method, self.model_name, self.fallback, self.seed = method, model, fallback, seed
        #: answer W_safe for a W_max(s) below every training scenario's (False: the paper's behaviour,
        #: predict anyway and let the fallbacks / Algorithm 2 handle sizes over W_max(s))
        self.guard_small_device = guard_small_device
        self.rng = np.random.default_rng(seed)
        self._model: Any = None
        self._classes: list[Size] = []
        self.n_features = 0
        self.base: Size = (1, 1)
        self.pool: list[Size] = []
        self.min_train_w_max = 0

    @property
    def label(self) -> str:
        """Name used in tables: ``J48/nearest``, ``runtime``, ``speedup``."""
        return f"{self.model_name}/{self.fallback}" if self.method == "classifier" else self.method

    # -- training -------------------------------------------------------------------
    def fit(self, features: np.ndarray, times: Sequence[dict[Size, float]], refused: Sequence[set[Size]],
            w_max: Sequence[int]) -> WorkgroupPredictor:
        """Train on scenarios: f(s) rows, measured t(s, w), W_refused(s) and W_max(s) per scenario."""
        X = np.asarray(features, dtype=float)
        if X.ndim != 2 or len(X) != len(times) or len(times) != len(w_max) or len(refused) != len(times):
            raise TechniqueError(f"WorkgroupPredictor.fit: features {X.shape}, times {len(times)}, refused "
                                 f"{len(refused)} and w_max {len(w_max)} must describe the same scenarios")
        if len(X) == 0:
            raise TechniqueError("WorkgroupPredictor.fit: no scenarios; give at least one measured scenario")
        self.n_features = X.shape[1]
        self.base = baseline(times)
        self.pool = sorted({w for t in times for w in t} | {w for r in refused for w in r})
        self.min_train_w_max = int(min(w_max))
        seed = int(self.rng.integers(2**31 - 1))
        if self.method == "classifier":
            omegas = [oracle(t) for t in times]
            self._classes = sorted(set(omegas))
            y = np.array([self._classes.index(w) for w in omegas])
            if len(self._classes) == 1:
                self._model = None  # one class: every prediction is that size
            else:
                self._model = make_classifier(self.model_name, seed).fit(X, y)
        else:
            rows, target = [], []
            for x, t in zip(X, times):
                tb = t[self.base]
                for w, tw in t.items():
                    rows.append([*x, w[0], w[1]])
                    target.append(tw if self.method == "runtime" else tb / tw)
            self._model = make_regressor(seed).fit(np.array(rows), np.array(target))
        return self

    # -- prediction -----------------------------------------------------------------
    def _w_safe(self, w_max: int, note: str, t0: float) -> Prediction:
        w = self.base
        if not within_max(w, w_max):
            fits = candidates(self.pool, w_max, set()) or [(1, 1)]
            w = min(fits, key=lambda c: math.hypot(c[0] - self.base[0], c[1] - self.base[1]))
        return Prediction(w, self.method, None, 0, (), time.perf_counter() - t0, note)

    def check_features(self, x: Sequence[float]) -> str:
        """Why ``x`` cannot be used ("" when it can)."""
        try:
            v = np.asarray(x, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            return "features are not numbers"
        if len(v) != self.n_features:
            return f"got {len(v)} features, the model was trained on {self.n_features}"
        if not np.all(np.isfinite(v)):
            return "features contain NaN or infinity"
        return ""

    def predict(self, x: Sequence[float], w_max: int, is_legal: Callable[[Size], bool] | None = None, *,
                pool: Sequence[Size] | None = None) -> Prediction:
        """A legal size for the scenario with features ``x`` and maximum ``w_max`` (never raises on bad input).

        ``pool``: the sizes the caller can launch (default: every size seen in
        training); the regressors' candidates and the fallbacks' choices come
        from it.
        """
        t0 = time.perf_counter()
        sizes = sorted({(int(a), int(b)) for a, b in pool}) if pool is not None else self.pool
        if self._model is None and not self._classes:
            raise TechniqueError("WorkgroupPredictor.predict: call fit(...) first")
        problem = self.check_features(x)
        if problem:
            return self._w_safe(w_max, f"{problem}; using the W_safe baseline {self.base}", t0)
        if self.guard_small_device and w_max < self.min_train_w_max:
            return self._w_safe(w_max, f"W_max(s) = {w_max} is below every training scenario's maximum "
                                       f"(smallest {self.min_train_w_max}); the models have not seen such a "
                                       f"device, using the W_safe baseline", t0)
        refused: set[Size] = set()

        def legal(w: Size) -> bool:
            return within_max(w, w_max) and (is_legal is None or bool(is_legal(w)))

        v = np.asarray(x, dtype=float).reshape(1, -1)
        try:
            if self.method == "classifier":
                first = self._classes[0] if self._model is None else self._classes[int(self._model.predict(v)[0])]
                w, tries = FALLBACKS[self.fallback](first, is_legal=legal, w_max=w_max, pool=sizes,
                                                    base=self.base, rng=self.rng, refused=refused)
            else:
                first, w, tries = self._regress(v[0], w_max, legal, refused, sizes)
        except NoLegalSizeError as exc:
            return self._w_safe(w_max, f"{exc}; using the W_safe baseline", t0)
        return Prediction(w, self.method, first, tries, tuple(sorted(refused)), time.perf_counter() - t0)

    def _regress(self, x: np.ndarray, w_max: int, legal: Callable[[Size], bool], refused: set[Size],
                 pool: Sequence[Size]) -> tuple[Size, Size, int]:
        """Algorithm 2 (lines 1-8); returns (first choice, chosen size, sizes tried after the first)."""
        W = candidates(pool, w_max, refused)
        if not W:
            raise NoLegalSizeError(f"no known size fits W_max={w_max}")
        rows = np.array([[*x, w[0], w[1]] for w in W])
        r = self._model.predict(rows)
        fitness = 1.0 / np.maximum(r, 1e-30) if self.method == "runtime" else r  # Delta(x)
        order = np.argsort(-fitness, kind="stable")
        first = W[int(order[0])]
        for tries, i in enumerate(order):
            w = W[int(i)]
            if legal(w):
                return first, w, tries
            refused.add(w)
        raise NoLegalSizeError(f"every known size within W_max={w_max} was refused")
