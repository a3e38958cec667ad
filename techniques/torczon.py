"""Torczon's multi-directional search, in the space's unit cube.

V. Torczon, "On the convergence of the multidirectional search algorithm",
SIAM J. Optim. 1(1), 1991 (and her 1989 Rice thesis).  Each iteration
reflects every vertex through the best one, tries an expansion when the
reflection improved, and otherwise contracts; the whole reflected or
contracted simplex is one batch, so parallel workers measure it at once.
Restarts begin at the best configuration the ensemble knows.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np

from techniques.base import SequentialTechnique, Step
from techniques.nelder_mead import initial_simplex

__all__ = ["Torczon"]


class Torczon(SequentialTechnique):
    """Multi-directional search: reflect / expand / contract the whole simplex."""

    name: ClassVar[str] = "Torczon"
    summary: ClassVar[str] = "Torczon multi-directional simplex search (1991), batch-parallel"

    def __init__(self, *, seed: int | None = None, initial_size: float = 0.2,
                 tolerance: float = 1e-12, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        self.initial_size = float(initial_size)
        self.tolerance = float(tolerance)

    def _batch(self, verts: np.ndarray) -> list[dict[str, Any]]:
        return [self.decode(v) for v in verts]

    def steps(self) -> Generator[Step, Any, None]:
        d = self.space.dims
        verts = initial_simplex(self.start_point(), self.initial_size, self.rng)
        vals = np.asarray((yield self._batch(verts)), dtype=float)
        for _ in range(100 * (d + 1)):
            b = int(np.argmin(vals))
            verts[[0, b]], vals[[0, b]] = verts[[b, 0]], vals[[b, 0]]
            if np.max(np.abs(verts[1:] - verts[0])) < self.tolerance:
                return
            best = verts[0]
            refl = np.clip(2.0 * best - verts[1:], 0.0, 1.0)
            fr = np.asarray((yield self._batch(refl)), dtype=float)
            if fr.min() < vals[0]:
                expd = np.clip(3.0 * best - 2.0 * verts[1:], 0.0, 1.0)
                fe = np.asarray((yield self._batch(expd)), dtype=float)
                if fe.min() < fr.min():
                    verts[1:], vals[1:] = expd, fe
                else:
                    verts[1:], vals[1:] = refl, fr
            else:
                cont = best + 0.5 * (verts[1:] - best)
                vals[1:] = np.asarray((yield self._batch(cont)), dtype=float)
                verts[1:] = cont
