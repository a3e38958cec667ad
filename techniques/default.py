"""The default ensemble: an AUC bandit over arms chosen by measurement.

The arms were chosen by replaying the five exhaustively measured GPU spaces
of ``../shared/data/spaces`` and the 4-D Rosenbrock benchmark through the
in-memory harness (see docs/TECHNIQUES.md, "Choosing the default", for the
numbers and the command), not by habit: two population arms that did best
on the discrete GPU spaces (differential evolution, the DEAP GA), random
sampling as a safety net for flat or deceptive spaces, and a local-refinement
arm restarted from the best (Nelder-Mead) that polishes continuous optima.
"""

from __future__ import annotations

from typing import Any, ClassVar

from techniques.bandit import AUCBandit

__all__ = ["DefaultEnsemble", "DEFAULT_ARMS"]

#: the arms of the default ensemble (see docs/TECHNIQUES.md for the measurement)
DEFAULT_ARMS: tuple[str, ...] = ("DifferentialEvolution", "GA", "NelderMead", "Random")


class DefaultEnsemble(AUCBandit):
    """AUC bandit (W=500, C=0.05) over the measured default arms."""

    name: ClassVar[str] = "default"
    summary: ClassVar[str] = "the default ensemble: AUC bandit over arms chosen by replay measurement"

    def __init__(self, *, seed: int | None = None, window: int = 500, c: float = 0.05,
                 **options: Any) -> None:
        super().__init__(seed=seed, arms=DEFAULT_ARMS, window=window, c=c, **options)
