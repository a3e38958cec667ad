"""Simulated annealing with a temperature schedule fitted to the budget.

Kirkpatrick, Gelatt & Vecchi, "Optimization by simulated annealing", Science
220, 1983; Metropolis acceptance exp(-delta/T).  Because objective scales
differ by orders of magnitude between apps, delta is the relative worsening
(f_new - f_cur) / |f_cur|.  The geometric schedule T_k = T0 (T1/T0)^(k/K)
(Kirkpatrick et al.) runs over K = the budget (unique evaluations) when one
is given, else over ``horizon`` steps, after which it reheats.  Moves are
Gaussian steps in the unit cube whose width shrinks with the temperature.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np

from techniques.base import SequentialTechnique, Step

__all__ = ["SimulatedAnnealing"]


class SimulatedAnnealing(SequentialTechnique):
    """Metropolis random walk with geometric cooling over the budget."""

    name: ClassVar[str] = "SimulatedAnnealing"
    summary: ClassVar[str] = "simulated annealing (Kirkpatrick 1983), cooling over the budget"
    max_stall: ClassVar[int] = 30

    def __init__(self, *, seed: int | None = None, t_start: float = 0.5, t_end: float = 1e-3,
                 horizon: int = 1000, step: float = 0.3, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        self.t_start = float(t_start)
        self.t_end = float(t_end)
        self.horizon = int(horizon)
        self.step = float(step)
        self._k = 0

    def temperature(self, k: int) -> float:
        """Temperature after ``k`` own steps (geometric from t_start to t_end over the horizon)."""
        length = self.budget if self.budget else self.horizon
        frac = min((k % max(length, 1)) / max(length, 1), 1.0)
        return self.t_start * (self.t_end / self.t_start) ** frac

    def steps(self) -> Generator[Step, Any, None]:
        x = self.start_point()
        fx = float((yield self.decode(x)))
        d = len(x)
        while True:
            t = self.temperature(self._k)
            self._k += 1
            width = max(self.step * math.sqrt(t / self.t_start), 1e-6)
            y = x.copy()
            mask = self.rng.random(d) < max(1.0 / d, 0.3)
            if not mask.any():
                mask[self.rng.integers(d)] = True
            y[mask] += self.rng.normal(0.0, width, int(mask.sum()))
            y = np.clip(y, 0.0, 1.0)
            fy = float((yield self.decode(y)))
            if fy <= fx:
                x, fx = y, fy
                continue
            if not math.isfinite(fy):
                continue
            scale = abs(fx) if math.isfinite(fx) and fx != 0.0 else 1.0
            if not math.isfinite(fx) or self.rng.random() < math.exp(-(fy - fx) / (scale * t)):
                x, fx = y, fy
