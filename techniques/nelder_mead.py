"""Nelder-Mead simplex search with restarts, in the space's unit cube.

Nelder & Mead, "A simplex method for function minimization", The Computer
Journal 7(4), 1965; coefficients (reflection 1, expansion 2, contraction 1/2,
shrink 1/2) and the inside/outside contraction as in Lagarias, Reeds, Wright &
Wright, SIAM J. Optim. 9(1), 1998.  Restarts (O'Neill, Applied Statistics 20,
1971) begin at the best configuration the ensemble knows, with a simplex that
is smaller each time it converged there and large again after a random start,
which is what lets it polish a continuous optimum to many digits while a
bandit spends the rest of the budget elsewhere.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np

from techniques.base import SequentialTechnique, Step

__all__ = ["NelderMead", "initial_simplex"]


def initial_simplex(x0: np.ndarray, size: float, rng: np.random.Generator) -> np.ndarray:
    """x0 plus one vertex per axis, stepping ``size`` inward (away from the nearer bound)."""
    d = len(x0)
    verts = np.repeat(x0[None, :], d + 1, axis=0)
    for i in range(d):
        step = size if x0[i] + size <= 1.0 else -size
        if x0[i] - size < 0.0 and x0[i] + size > 1.0:
            step = size * (1.0 if rng.random() < 0.5 else -1.0)
        verts[i + 1, i] = np.clip(x0[i] + step, 0.0, 1.0)
    return verts


class NelderMead(SequentialTechnique):
    """Downhill simplex; restarts from the best known point with a shrinking simplex."""

    name: ClassVar[str] = "NelderMead"
    summary: ClassVar[str] = "Nelder-Mead simplex (1965) with restarts from the best known point"

    def __init__(self, *, seed: int | None = None, initial_size: float = 0.2,
                 tolerance: float = 1e-12, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        self.initial_size = float(initial_size)
        self.tolerance = float(tolerance)
        self._size = self.initial_size

    def _evaluate(self, verts: np.ndarray) -> list[dict[str, Any]]:
        return [self.decode(v) for v in verts]

    def steps(self) -> Generator[Step, Any, None]:
        d = self.space.dims
        x0 = self.start_point()
        best_at_start = self.best_value
        size = self._size
        verts = initial_simplex(x0, size, self.rng)
        vals = np.asarray((yield self._evaluate(verts)), dtype=float)
        converged = False
        for _ in range(200 * (d + 1)):
            order = np.argsort(vals, kind="stable")
            verts, vals = verts[order], vals[order]
            if np.max(np.abs(verts[1:] - verts[0])) < self.tolerance:
                converged = True
                break
            centroid = verts[:-1].mean(axis=0)
            worst = verts[-1]
            xr = np.clip(centroid + (centroid - worst), 0.0, 1.0)
            fr = float((yield self.decode(xr)))
            if fr < vals[0]:
                xe = np.clip(centroid + 2.0 * (centroid - worst), 0.0, 1.0)
                fe = float((yield self.decode(xe)))
                verts[-1], vals[-1] = (xe, fe) if fe < fr else (xr, fr)
                continue
            if fr < vals[-2]:
                verts[-1], vals[-1] = xr, fr
                continue
            if fr < vals[-1]:  # outside contraction
                xc = np.clip(centroid + 0.5 * (xr - centroid), 0.0, 1.0)
                fc = float((yield self.decode(xc)))
                if fc <= fr:
                    verts[-1], vals[-1] = xc, fc
                    continue
            else:  # inside contraction
                xc = np.clip(centroid + 0.5 * (worst - centroid), 0.0, 1.0)
                fc = float((yield self.decode(xc)))
                if fc < vals[-1]:
                    verts[-1], vals[-1] = xc, fc
                    continue
            # shrink towards the best vertex
            verts[1:] = verts[0] + 0.5 * (verts[1:] - verts[0])
            vals[1:] = np.asarray((yield self._evaluate(verts[1:])), dtype=float)
        # next restart: a smaller simplex while converging keeps paying, full size otherwise
        improved = self.best_value < best_at_start
        self._size = max(self._size * 0.5, 1e-6) if converged and improved else self.initial_size
