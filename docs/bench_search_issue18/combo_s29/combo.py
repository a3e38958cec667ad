"""Session 29 prototypes: the GP and TPE sharing the lead of the default ensemble (issue 18).

Screened with ``python -m scripts.bench_search --techniques default,docs.bench_search_issue18.combo_s29.combo:Alt,...``;
the rule they were judged by is in ``rule.md`` beside this file, written before the first run.
Each is the default ensemble with TPE as a fifth arm; on all-discrete spaces (where the GP leads) the
lead is shared as each class says.  On a space with a continuous parameter nothing changes except that
the AUC bandit has TPE among its arms.
"""

from __future__ import annotations

from typing import Any, ClassVar

from techniques.bandit import AUCBandit
from techniques.default import DEFAULT_ARMS, DefaultEnsemble


class _WithTPE(DefaultEnsemble):
    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # rebuild as an AUC bandit over the default arms plus TPE, then redo the default's model set-up
        arms = (*DEFAULT_ARMS, "TPE")
        AUCBandit.__init__(self, seed=options.get("seed"), arms=arms, window=500, c=0.1)
        from techniques.bayes_opt import BayesOpt
        from techniques.default import MODEL_COMPUTE_SHARE, MODEL_SPREAD_REFITS

        self._tpe = len(arms) - 1
        for i, arm in enumerate(self.arms):
            if isinstance(arm, BayesOpt):
                self._model = i
                if arm.compute_share is None:
                    arm.compute_share = MODEL_COMPUTE_SHARE
                if arm.spread_refits is False:
                    arm.spread_refits = MODEL_SPREAD_REFITS
                    arm.spreading = MODEL_SPREAD_REFITS is True
        self._lead_picks = 0

    def _gp_initial_done(self) -> bool:
        gp = self.arms[self._model]
        return len(getattr(gp, "_obs", {})) >= int(getattr(gp, "_n_init", 20) or 20)

    def _choose(self, blocked: set[int]) -> int:  # pragma: no cover - overridden
        raise NotImplementedError

    def _pick(self, blocked: set[int]) -> int | None:
        if self.model_led and self._model is not None:
            gp_ok = self._model not in blocked
            tpe_ok = self._tpe not in blocked
            if gp_ok and tpe_ok:
                return self._choose(blocked)
            if gp_ok:
                return self._model
            if tpe_ok:
                return self._tpe
        if not self.model_led:
            return super()._pick(blocked)
        return AUCBandit._pick(self, blocked | {self._tpe})

    def propose(self, n: int) -> list[dict[str, Any]]:
        out = super().propose(n)
        return out


class Alt(_WithTPE):
    """After the GP's initial design, the lead alternates pick by pick between the GP and TPE."""

    name: ClassVar[str] = "default-alt-tpe"

    def _choose(self, blocked: set[int]) -> int:
        if not self._gp_initial_done():
            return self._model
        self._lead_picks += 1
        return self._tpe if self._lead_picks % 2 == 0 else self._model


class Duel(_WithTPE):
    """After the GP's initial design, the AUC bandit (W=500, C=0.1) chooses between the GP and TPE."""

    name: ClassVar[str] = "default-duel-tpe"

    def _choose(self, blocked: set[int]) -> int:
        if not self._gp_initial_done():
            return self._model
        return AUCBandit._pick(self, set(range(len(self.arms))) - {self._model, self._tpe})


class Late(_WithTPE):
    """The GP leads alone for the first half of the budget, then the lead alternates with TPE."""

    name: ClassVar[str] = "default-late-tpe"

    def _choose(self, blocked: set[int]) -> int:
        if not self.budget or self.evaluations < self.budget // 2:
            return self._model
        self._lead_picks += 1
        return self._tpe if self._lead_picks % 2 == 0 else self._model


class DuelMinGood(Duel):
    """``Duel``, with TPE in the duel only once its good set holds at least 5 points (rule.md, second part)."""

    name: ClassVar[str] = "default-duel-tpe-min5"

    def _gp_initial_done(self) -> bool:
        import math

        tpe = self.arms[self._tpe]
        n = len(getattr(self.arms[self._model], "_obs", {}))
        return super()._gp_initial_done() and math.ceil(tpe.gamma * n) >= 5
