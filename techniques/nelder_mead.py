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

from ensemble.errors import TechniqueError
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
    """Downhill simplex; restarts from the best known point with a shrinking simplex.

    ``follow_incumbent`` (off by default; the default ensemble keeps it off):
    when another arm of an ensemble finds a configuration better than the
    simplex's best vertex, the simplex is abandoned and the next one starts
    at that configuration (full size).  The design-card preset turns it on.
    """

    name: ClassVar[str] = "NelderMead"
    summary: ClassVar[str] = "Nelder-Mead simplex (1965) with restarts from the best known point"

    def __init__(self, *, seed: int | None = None, initial_size: float = 0.2,
                 tolerance: float = 1e-12, follow_incumbent: bool = False, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        if not isinstance(follow_incumbent, bool):
            raise TechniqueError(f"NelderMead: follow_incumbent={follow_incumbent!r}: give true or false "
                                 "(a string such as 'no' would silently read as true)")
        self.initial_size = float(initial_size)
        self.tolerance = float(tolerance)
        #: restart the simplex at a new best another arm of the ensemble found (off: only at own restarts)
        self.follow_incumbent = follow_incumbent
        #: simplexes abandoned for another arm's new best (``follow_incumbent``)
        self.follows = 0
        self._size = self.initial_size
        self._foreign_best = False

    def observe_foreign(self, trial: Any) -> None:
        """Another arm's result; with ``follow_incumbent`` a new best it found ends the current simplex.

        Why: in an ensemble another arm's new best is the run's best; a simplex
        still contracting around a worse point spends the arm's trials away
        from it.  (OpenTuner's annealing returns to ``driver.best_result`` once
        cold; its Nelder-Mead seeds from ``seed_cfg`` or a random point:
        docs/CSTUNER.md, session 15.)
        """
        before = self.best_value
        super().observe_foreign(trial)
        if self.best_value < before:
            self._foreign_best = True

    def _evaluate(self, verts: np.ndarray) -> list[dict[str, Any]]:
        return [self.decode(v) for v in verts]

    def steps(self) -> Generator[Step, Any, None]:
        d = self.space.dims
        self._foreign_best = False
        x0 = self.start_point()
        best_at_start = self.best_value
        size = self._size
        verts = initial_simplex(x0, size, self.rng)
        vals = np.asarray((yield self._evaluate(verts)), dtype=float)
        converged = False
        for _ in range(200 * (d + 1)):
            order = np.argsort(vals, kind="stable")
            verts, vals = verts[order], vals[order]
            if self.follow_incumbent and self._foreign_best and self.best_value < vals[0]:
                # another arm found a better point: begin again there, with a full-size simplex
                self.follows += 1
                self._size = self.initial_size
                return
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
