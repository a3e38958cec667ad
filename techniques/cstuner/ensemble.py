"""The design-card ensemble: an AUC bandit over Nelder-Mead, simulated annealing and csTuner.

The project's headline shape (docs/CSTUNER.md, "The design-card ensemble"):
OpenTuner's AUC bandit (:mod:`techniques.bandit`) allocates trials among
Nelder-Mead, simulated annealing and the CV-grouped island GA with
approximate stopping (:class:`techniques.cstuner.technique.CsTuner`).  It
runs unchanged in one process (the GA's sub-populations on a local ring) or
under ``mpirun -n K``: in the default central mode rank 0 runs the bandit
and the GA holds one sub-population per rank; with
``ENSEMBLE_MPI_SEARCH=per-rank`` every rank runs its own bandit and its GA
sub-population migrates to both ring neighbours over MPI.  Results move only
through the database.
"""

from __future__ import annotations

from typing import Any, ClassVar

from ensemble.errors import TechniqueError
from techniques.bandit import AUCBandit
from techniques.cstuner.technique import CsTuner

__all__ = ["ARM_OPTIONS", "CsTunerEnsemble"]

#: the CsTuner arm's options that differ from CsTuner's defaults (docs/CSTUNER.md, difference 16)
ARM_OPTIONS: dict[str, Any] = {"budget_share": False}


class CsTunerEnsemble(AUCBandit):
    """``cstuner-ensemble``: AUCBandit(NelderMead, SimulatedAnnealing, CsTuner).

    ``cstuner`` passes options to the CsTuner arm (e.g. ``{"samples": 64}``)
    over the preset's own (``ARM_OPTIONS``: the arm keeps ``budget_share``
    off, the 2026-11-26 screen did not adopt it for the preset);
    ``window`` and ``c`` are the bandit's; ``startup`` (on) lets csTuner
    collect its performance dataset first, uncredited, before the bandit
    compares the arms (:mod:`techniques.bandit`); ``follow_incumbent``
    (True, the default since session 15) makes Nelder-Mead restart and
    annealing move to a new best another arm found, "cold" only annealing,
    once cold, as OpenTuner's, False neither (their option of the same
    name; screened in session 15, docs/CSTUNER.md: True adopted, "cold" not).
    """

    name: ClassVar[str] = "cstuner-ensemble"
    summary: ClassVar[str] = ("design card: AUC bandit over NelderMead, SimulatedAnnealing and csTuner's "
                              "CV-grouped island GA")

    def __init__(self, *, seed: int | None = None, cstuner: dict[str, Any] | None = None,
                 window: int = 500, c: float = 0.05, startup: bool = True,
                 follow_incumbent: bool | str = True) -> None:
        from ensemble.registry import create_technique

        if not (isinstance(follow_incumbent, bool) or follow_incumbent == "cold"):
            raise TechniqueError(f"cstuner-ensemble: follow_incumbent={follow_incumbent!r}: give true, false or "
                                 "'cold' (annealing only, OpenTuner's rule; Nelder-Mead as without)")
        self.follow_incumbent = follow_incumbent
        nm: dict[str, Any] = {"follow_incumbent": True} if follow_incumbent is True else {}
        sa: dict[str, Any] = {"follow_incumbent": follow_incumbent} if follow_incumbent else {}
        arms = [create_technique("NelderMead", **nm), create_technique("SimulatedAnnealing", **sa),
                CsTuner(**{**ARM_OPTIONS, **(cstuner or {})})]
        super().__init__(seed=seed, arms=arms, window=window, c=c, startup=startup)
