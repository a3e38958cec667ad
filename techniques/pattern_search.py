"""Pattern (compass) search in the space's unit cube.

Hooke & Jeeves, "Direct search solution of numerical and statistical
problems", J. ACM 8(2), 1961; the compass/coordinate form and its step
control as analysed by Kolda, Lewis & Torczon, SIAM Review 45(3), 2003.  Each
poll measures +-step along every axis as one batch (parallel-friendly), moves
to the best improving point and doubles nothing; with no improvement the step
halves.  Restarts begin at the best known configuration with a step that is
the initial one; a restart after a run that found nothing better starts at a
random valid point instead (an iterated local search on discrete spaces).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np

from techniques.base import SequentialTechnique, Step

__all__ = ["PatternSearch"]


class PatternSearch(SequentialTechnique):
    """Compass search: poll +-step on each axis, move to the best, else halve the step."""

    name: ClassVar[str] = "PatternSearch"
    summary: ClassVar[str] = "compass pattern search (Hooke-Jeeves 1961), polls as batches"

    def __init__(self, *, seed: int | None = None, initial_step: float = 0.25,
                 min_step: float = 1e-10, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        self.initial_step = float(initial_step)
        self.min_step = float(min_step)
        self._restart_at_best = True

    def steps(self) -> Generator[Step, Any, None]:
        d = self.space.dims
        x = self.start_point() if self._restart_at_best else self.random_point()
        best_at_start = self.best_value
        self._restart_at_best = False
        center = self.decode(x)
        fx = float((yield center))
        step = self.initial_step
        center_hash = self.hash(center)
        while step >= self.min_step:
            polls: list[np.ndarray] = []
            configs: list[dict[str, Any]] = []
            for i in self.rng.permutation(d):
                for sign in (1.0, -1.0):
                    y = x.copy()
                    y[i] = np.clip(y[i] + sign * step, 0.0, 1.0)
                    c = self.decode(y)
                    if self.hash(c) != center_hash:
                        polls.append(y)
                        configs.append(c)
            if not configs:
                step *= 0.5
                continue
            vals = np.asarray((yield configs), dtype=float)
            k = int(np.argmin(vals))
            if vals[k] < fx:
                x, fx = polls[k], float(vals[k])
                center_hash = self.hash(configs[k])
            else:
                step *= 0.5
            # a run that improved the ensemble's best restarts there; a barren one moves on
            self._restart_at_best = self.best_value < best_at_start
