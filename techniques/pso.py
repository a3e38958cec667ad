"""Particle swarm optimisation in the space's unit cube.

Kennedy & Eberhart, "Particle swarm optimization", Proc. ICNN 1995, with the
constriction coefficients of Clerc & Kennedy, IEEE Trans. Evol. Comput. 6(1),
2002 (chi = 0.7298, c1 = c2 = 1.49618, i.e. phi = 4.1).  Velocities are
clamped to half the cube; one swarm update is one batch (parallel-friendly).
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np

from techniques.base import SequentialTechnique, Step

__all__ = ["PSO"]

_CHI = 0.7298
_C = 1.49618


class PSO(SequentialTechnique):
    """Global-best particle swarm with constriction."""

    name: ClassVar[str] = "PSO"
    summary: ClassVar[str] = "particle swarm (Kennedy & Eberhart 1995) with constriction"
    max_stall: ClassVar[int] = 60

    def __init__(self, *, seed: int | None = None, swarm: int = 20, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        self.swarm = max(int(swarm), 2)

    def steps(self) -> Generator[Step, Any, None]:
        n = self.swarm
        pos = np.array([self.random_point() for _ in range(n)])
        if self.best_config is not None:
            pos[0] = self.encode(self.best_config)
        d = pos.shape[1]
        vel = self.rng.uniform(-0.1, 0.1, size=(n, d))
        fit = np.asarray((yield [self.decode(x) for x in pos]), dtype=float)
        pbest, pfit = pos.copy(), fit.copy()
        while True:
            g = pbest[int(np.argmin(pfit))]
            r1, r2 = self.rng.random((n, d)), self.rng.random((n, d))
            vel = _CHI * (vel + _C * r1 * (pbest - pos) + _C * r2 * (g - pos))
            vel = np.clip(vel, -0.5, 0.5)
            pos = np.clip(pos + vel, 0.0, 1.0)
            fit = np.asarray((yield [self.decode(x) for x in pos]), dtype=float)
            better = fit < pfit
            pbest[better], pfit[better] = pos[better], fit[better]
