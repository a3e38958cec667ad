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
through the database.  Since session 16 the bandit credits an arm by the rank
of its results (Fialho et al.'s rank-based AUC) with UCB1-Tuned's
exploration term, not by OpenTuner's new-best credit (``credit`` option;
docs/CSTUNER.md).
"""

from __future__ import annotations

import math
from collections import deque
from typing import Any, ClassVar

import numpy as np

from ensemble.errors import TechniqueError
from ensemble.technique import Trial
from techniques.bandit import AUCBandit
from techniques.cstuner.technique import CsTuner

__all__ = ["ARM_OPTIONS", "CREDIT_RULES", "EXPLORATION_TERMS", "CsTunerEnsemble", "RankWindow"]

#: the bandit's credit rules: OpenTuner's binary new-best credit, or Fialho et al.'s rank-based AUC
CREDIT_RULES = ("new-best", "rank")
#: the exploration terms of the rank credit: UCB1's with the bandit's c (OpenTuner's), or UCB1-Tuned's
EXPLORATION_TERMS = ("ucb1", "tuned")


class RankWindow:
    """Fialho et al.'s rank-based area under the curve over the last ``window`` uses (``credit="rank"``).

    Fialho, Da Costa, Schoenauer & Sebag, "Analyzing bandit-based adaptive
    operator selection", Ann. Math. Artif. Intell. 60 (2010), section 3: the
    uses in the window are ranked by their reward (there the fitness
    improvement of the offspring over its parent; here the result's value
    minus the run's best before it, lower is better, a failure or a duplicate
    worst); an arm's credit is the area under the ROC curve of its uses
    against the other arms' uses in that ranking, i.e. the probability that
    one of its uses ranks above one of another arm's (ties half; no decay).
    Unlike OpenTuner's binary credit (1 only for a new best), every use
    carries information, so the credit does not vanish when new bests are
    rare.  The exploration term is the UCB1 term of :class:`AUCWindow`.
    """

    def __init__(self, arms: int, window: int, c: float) -> None:
        self.arms, self.window, self.c = int(arms), int(window), float(c)
        self.history: deque[tuple[int, float]] = deque(maxlen=self.window)
        self._cache: list[np.ndarray] | None = None

    def push(self, arm: int, reward: float) -> None:
        self.history.append((int(arm), float(reward)))
        self._cache = None

    @property
    def uses(self) -> list[int]:
        counts = [0] * self.arms
        for a, _ in self.history:
            counts[a] += 1
        return counts

    def percentiles(self) -> list[np.ndarray]:
        """Per arm, per use in the window: the share of the other arms' uses it ranks above (ties half).

        Their mean is the arm's ROC area (the Mann-Whitney statistic over the
        uses' counts); their spread is what ``exploration="tuned"`` reads.
        """
        if self._cache is not None:
            return self._cache
        out = [np.empty(0) for _ in range(self.arms)]
        if self.history:
            arms = np.fromiter((a for a, _ in self.history), dtype=int, count=len(self.history))
            rewards = np.fromiter((r for _, r in self.history), dtype=float, count=len(self.history))
            rewards = np.where(np.isnan(rewards), np.inf, rewards)
            for i in range(self.arms):
                mine = arms == i
                if mine.any() and (~mine).any():
                    a, b = rewards[mine][:, None], rewards[~mine][None, :]
                    out[i] = ((a < b).sum(axis=1) + 0.5 * (a == b).sum(axis=1)) / b.shape[1]
        self._cache = out
        return out

    def exploitation(self) -> list[float]:
        """Per arm: the ROC area of its uses against the other arms' (0.5 when it has no use or no rival)."""
        return [float(p.mean()) if p.size else 0.5 for p in self.percentiles()]

    def score(self, arm: int, exploration: str = "ucb1") -> float:
        """The ROC area plus an exploration term: UCB1's ``c`` sqrt(2 ln N / n) or UCB1-Tuned's.

        UCB1-Tuned (Auer, Cesa-Bianchi & Fischer 2002, section 4) for rewards
        in [0, 1]: sqrt(ln N / n * min(1/4, V)), V the variance of the arm's
        per-use percentiles plus sqrt(2 ln N / n); no constant to choose.
        """
        n = self.uses[arm]
        if n == 0:
            return math.inf
        log_n = math.log(len(self.history))
        if exploration == "tuned":
            p = self.percentiles()[arm]
            var = float(p.var()) if p.size else 0.25
            return (float(p.mean()) if p.size else 0.5) + math.sqrt(
                log_n / n * min(0.25, var + math.sqrt(2.0 * log_n / n)))
        return self.exploitation()[arm] + self.c * math.sqrt(2.0 * log_n / n)


#: the CsTuner arm's options that differ from CsTuner's defaults (docs/CSTUNER.md, difference 16)
ARM_OPTIONS: dict[str, Any] = {"budget_share": False, "approximate_stop": "distinct"}


class CsTunerEnsemble(AUCBandit):
    """``cstuner-ensemble``: AUCBandit(NelderMead, SimulatedAnnealing, CsTuner).

    ``cstuner`` passes options to the CsTuner arm (e.g. ``{"samples": 64}``)
    over the preset's own (``ARM_OPTIONS``: the arm keeps ``budget_share``
    off, the 2026-11-26 screen did not adopt it for the preset, and the
    approximate stop as it was, ``approximate_stop="distinct"``: session 16c
    adopted the population stop for CsTuner alone, not screened in the preset);
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
                 follow_incumbent: bool | str = True, credit: str = "rank",
                 exploration: str | None = None) -> None:
        from ensemble.registry import create_technique

        if not (isinstance(follow_incumbent, bool) or follow_incumbent == "cold"):
            raise TechniqueError(f"cstuner-ensemble: follow_incumbent={follow_incumbent!r}: give true, false or "
                                 "'cold' (annealing only, OpenTuner's rule; Nelder-Mead as without)")
        if credit not in CREDIT_RULES:
            raise TechniqueError(f"cstuner-ensemble: credit={credit!r}: give 'new-best' (OpenTuner's) or 'rank' "
                                 "(Fialho et al.'s rank-based AUC)")
        if exploration is None:
            exploration = "tuned" if credit == "rank" else "ucb1"
        if exploration not in EXPLORATION_TERMS:
            raise TechniqueError(f"cstuner-ensemble: exploration={exploration!r}: give 'ucb1' (c * sqrt(2 ln N / n), "
                                 "OpenTuner's) or 'tuned' (UCB1-Tuned, with credit='rank')")
        if exploration == "tuned" and credit != "rank":
            raise TechniqueError("cstuner-ensemble: exploration='tuned' reads the spread of the rank credit's per-use "
                                 "values; give it with credit='rank'")
        self.follow_incumbent = follow_incumbent
        self.credit_rule = credit
        self.exploration = exploration
        nm: dict[str, Any] = {"follow_incumbent": True} if follow_incumbent is True else {}
        sa: dict[str, Any] = {"follow_incumbent": follow_incumbent} if follow_incumbent else {}
        arms = [create_technique("NelderMead", **nm), create_technique("SimulatedAnnealing", **sa),
                CsTuner(**{**ARM_OPTIONS, **(cstuner or {})})]
        super().__init__(seed=seed, arms=arms, window=window, c=c, startup=startup)
        self.ranks = RankWindow(len(self.arms), self.window, self.c)
        self._reward = math.inf

    # -- the rank-based credit (credit="rank"); "new-best" leaves AUCBandit as it is ------------------------
    def _reset_history(self) -> None:
        super()._reset_history()
        self.ranks = RankWindow(len(self.arms), self.window, self.c)

    def _credit(self, trial: Trial, best_before: float) -> bool:   # type: ignore[override]
        state = getattr(trial.state, "value", trial.state)
        ok = not trial.duplicate and state == "OK" and math.isfinite(trial.value)
        self._reward = (trial.value - best_before) if ok and math.isfinite(best_before) else (
            -math.inf if ok else math.inf)      # the first result improves on nothing: best
        return AUCBandit._credit(trial, best_before)

    def _on_result(self, arm: int, credit: bool) -> None:
        super()._on_result(arm, credit)
        if self.credit_rule != "rank":
            return
        if self.startup and self._told[arm] <= self._startup_trials(arm):
            return                              # a start-up result: not credited (AUCBandit's rule)
        self.ranks.push(arm, self._reward)

    def _arm_score(self, arm: int) -> float:
        if self.credit_rule != "rank":
            return super()._arm_score(arm)
        return float(self.ranks.score(arm, self.exploration))

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        if self.credit_rule == "rank":
            state = {**state, "credit": "rank", "rank_uses": dict(zip(self.labels, self.ranks.uses)),
                     "rank_auc": dict(zip(self.labels, self.ranks.exploitation()))}
        return state
