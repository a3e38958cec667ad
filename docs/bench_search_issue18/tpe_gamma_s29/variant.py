"""TPE with Optuna's good-set size, min(ceil(0.1 n), 25), for the session-29 screen (rule.md here)."""

from __future__ import annotations

import math
from typing import ClassVar

import numpy as np

from techniques.tpe import TPE


class OptunaGamma(TPE):
    name: ClassVar[str] = "TPE-optuna-gamma"

    def _split(self, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        v = np.asarray(self._v, dtype=float)
        finite = np.flatnonzero(np.isfinite(v))
        n_good = max(1, min(len(finite), math.ceil(0.1 * len(v)), 25))
        order = finite[np.lexsort((finite, y[finite]))]
        good = order[:n_good]
        bad = np.setdiff1d(np.arange(len(v)), good)
        return good, bad
