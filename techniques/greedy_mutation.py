"""Greedy mutation of the best configuration (uniform and normal variants).

A (1+lambda) evolution strategy around the incumbent (Rechenberg 1973;
Schwefel 1981) in the form OpenTuner's ensemble uses as its greedy mutation
arms (Ansel et al., PACT 2014): take the best configuration the ensemble knows,
change each unit-cube coordinate with probability ``rate`` (at least one),
either to a uniform random value (:class:`GreedyMutation`) or by a Gaussian
step of width ``sigma`` (:class:`NormalGreedyMutation`), and propose it.  The
repair step keeps every mutant valid.
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np

from techniques.base import BaseTechnique

__all__ = ["GreedyMutation", "NormalGreedyMutation"]


class GreedyMutation(BaseTechnique):
    """Mutate the best known configuration: selected coordinates re-drawn uniformly."""

    name: ClassVar[str] = "GreedyMutation"
    summary: ClassVar[str] = "mutate the best known config, uniform re-draw of coordinates"

    def __init__(self, *, seed: int | None = None, rate: float = 0.3, sigma: float = 0.1,
                 **options: Any) -> None:
        super().__init__(seed=seed, **options)
        self.rate = float(rate)
        self.sigma = float(sigma)

    def _mutate(self, x: np.ndarray, mask: np.ndarray, strength: float) -> np.ndarray:
        y = x.copy()
        y[mask] = self.rng.random(int(mask.sum()))
        return y

    def propose(self, n: int) -> list[dict[str, Any]]:
        self._require_bound()
        if self.best_config is None or not np.isfinite(self.best_value):
            return [self.random_config() for _ in range(n)]
        x = self.encode(self.best_config)
        out: list[dict[str, Any]] = []
        for _ in range(n):
            for attempt in range(8):  # prefer an unmeasured mutant; mutate harder each retry
                strength = 1.0 + 0.5 * attempt
                mask = self.rng.random(len(x)) < min(self.rate * strength, 1.0)
                if not mask.any():
                    mask[self.rng.integers(len(x))] = True
                config = self.decode(np.clip(self._mutate(x, mask, strength), 0.0, 1.0))
                if self.hash(config) not in self.known:
                    break
            else:
                if self.exhausted():
                    break
            out.append(config)
        return out


class NormalGreedyMutation(GreedyMutation):
    """Mutate the best known configuration: Gaussian steps on selected coordinates."""

    name: ClassVar[str] = "NormalGreedyMutation"
    summary: ClassVar[str] = "mutate the best known config, Gaussian steps of width sigma"

    def _mutate(self, x: np.ndarray, mask: np.ndarray, strength: float) -> np.ndarray:
        y = x.copy()
        y[mask] += self.rng.normal(0.0, self.sigma * strength, int(mask.sum()))
        return y
