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

from ensemble.errors import TechniqueError
from techniques.base import SequentialTechnique, Step

__all__ = ["SimulatedAnnealing"]


class SimulatedAnnealing(SequentialTechnique):
    """Metropolis random walk with geometric cooling over the budget.

    ``follow_incumbent`` (False by default): True: when another arm of an
    ensemble finds a configuration better than the walk's current one, the
    walk moves there before its next step.  "cold": OpenTuner's rule
    (``PseudoAnnealingSearch.main_generator``, opentuner/search/
    simulatedannealing.py: "switch to the global best if temperature is
    low"): once a move twice as slow would be accepted with probability
    below ``COLD`` (exp(-1/T) < 1e-4, OpenTuner's ``AcceptanceFunction(0,
    1, temp, 1) < .0001``), the walk moves to the run's best (any arm's,
    its own included) whenever that is better than its state; while hot it
    walks freely.  Why: without it an arm that shares an ensemble's budget
    keeps walking away from the run's best.  The design-card preset uses
    one of them (docs/CSTUNER.md, session 15).
    """

    #: "cold": the acceptance probability of a twice-as-slow move below which the walk rejoins the best
    COLD: ClassVar[float] = 1e-4

    name: ClassVar[str] = "SimulatedAnnealing"
    summary: ClassVar[str] = "simulated annealing (Kirkpatrick 1983), cooling over the budget"
    max_stall: ClassVar[int] = 30

    def __init__(self, *, seed: int | None = None, t_start: float = 0.5, t_end: float = 1e-3,
                 horizon: int = 1000, step: float = 0.3, follow_incumbent: bool | str = False,
                 **options: Any) -> None:
        super().__init__(seed=seed, **options)
        if not (isinstance(follow_incumbent, bool) or follow_incumbent == "cold"):
            raise TechniqueError(f"SimulatedAnnealing: follow_incumbent={follow_incumbent!r}: give true, false "
                                 "or 'cold' (OpenTuner's rule: only once the walk is cold)")
        self.follow_incumbent = follow_incumbent
        #: moves to another arm's new best (``follow_incumbent``)
        self.follows = 0
        self._foreign_best = False
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

    def observe_foreign(self, trial: Any) -> None:
        """Another arm's result; remember whether it is a new best (``follow_incumbent``)."""
        before = self.best_value
        super().observe_foreign(trial)
        if self.best_value < before:
            self._foreign_best = True

    def steps(self) -> Generator[Step, Any, None]:
        self._foreign_best = False
        x = self.start_point()
        fx = float((yield self.decode(x)))
        d = len(x)
        while True:
            t = self.temperature(self._k)
            if self.follow_incumbent is True and self._foreign_best:
                self._foreign_best = False
                if self.best_config is not None and self.best_value < fx:
                    x, fx = self.encode(self.best_config), self.best_value
                    self.follows += 1
            elif (self.follow_incumbent == "cold" and math.exp(-1.0 / t) < self.COLD
                  and self.best_config is not None and self.best_value < fx):
                x, fx = self.encode(self.best_config), self.best_value
                self.follows += 1
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
