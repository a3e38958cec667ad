"""Session 36's probes, for bench_search's ``--techniques`` (module:Class): the default of record with another size
of its model's initial design (BayesOpt's ``_n_init``; today min(20, max(5, budget // 5)), the 20 of Willemsen et
al., PMBS 2021).

* ``Init2d``: 2 (d + 1) points, d the parameters with more than one level (the budget's fifth and 20 still cap it,
  5 is still the floor): a design that grows with the dimension, as is common in BO practice, instead of a
  constant; on the replay spaces 16 (convolution), 14 (dedispersion), 10 (pnpoly), W7800 unchanged (7).
* ``Init10``: min(10, max(5, budget // 5)).

Why: in file mode the score axis starts at the 2nd-3rd evaluation, and while the design is measured the run is
random search (P(k) about 0); a shorter design hands the model the lead earlier. Development probes on read seeds;
nothing is adopted from them without a rule written before a run on unread seeds.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from techniques.default import DefaultEnsemble


def _n_init_2d(arm: Any) -> int:
    d = sum(1 for p in arm.space.params if not getattr(p, "discrete", True) or len(list(p.values())) > 1)
    n = 2 * (d + 1)
    cap = 20 if not arm.budget else min(20, int(arm.budget) // 5)
    return max(5, min(n, cap))


def _n_init_10(arm: Any) -> int:
    return 10 if not arm.budget else min(10, max(5, int(arm.budget) // 5))


def _after_bind(arm: Any, step: Callable[[Any], None]) -> None:
    """Run ``step(arm)`` each time the model arm is bound, after its own ``_on_bind`` (the probes' one hook)."""
    bind = arm._on_bind

    def _on_bind() -> None:
        bind()
        step(arm)

    arm._on_bind = _on_bind


class _Sized(DefaultEnsemble):
    rule: Any = None

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        rule = type(self).rule
        _after_bind(self.arms[self._model], lambda arm: setattr(arm, "_n_init", rule(arm)))


class Init2d(_Sized):
    name = "default_init2d"
    rule = staticmethod(_n_init_2d)


class Init10(_Sized):
    name = "default_init10"
    rule = staticmethod(_n_init_10)


class _Prior(DefaultEnsemble):
    prior: str | None = None

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.arms[self._model].lengthscale_prior = type(self).prior


class PriorGamma(_Prior):
    """The model's GP length scales fitted by MAP under Gamma(3, 6) (techniques.gaussian_process)."""

    name = "default_prior_gamma"
    prior = "gamma"


class PriorDim(_Prior):
    """The model's GP length scales fitted by MAP under the dimension-scaled log-normal prior (Hvarfner et al. 2024)."""

    name = "default_prior_dim"
    prior = "dimension"


class Alternate(DefaultEnsemble):
    """The two leaders (the GP and TPE) take turns after the design, instead of the AUC bandit choosing between
    them: a probe of whether the bandit's lock-in on one leader costs small budgets (W7800's 37)."""

    name = "default_alternate"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self._turn = 0

    def _pick(self, blocked: set[int]) -> int | None:
        partner = self._partner
        if (self.model_led and self._model is not None and not self._model_retired() and partner is not None
                and self._model not in blocked and partner not in blocked
                and getattr(self.arms[self._model], "initial_design_done", True)):
            self._turn += 1
            return self._model if self._turn % 2 else partner
        return super()._pick(blocked)


def _one_hot_columns(space: Any, most: int) -> list[tuple[str, dict[Any, float]]]:
    """One column per level of each parameter with 3..``most`` levels: 1.0 at that level, else 0.0."""
    cols: list[tuple[str, dict[Any, float]]] = []
    for p in space.params:
        n = getattr(p, "cardinality", None)
        if not isinstance(n, int) or not 3 <= n <= most or not hasattr(p, "value_at"):
            continue
        values = [p.value_at(i) for i in range(n)]
        cols.extend((p.name, {v: float(v == level) for v in values}) for level in values)
    return cols


class OneHot4(DefaultEnsemble):
    """The GP also sees each level of a parameter with 3 or 4 levels as its own 0/1 input (a categorical view
    beside the ordinal index): numeric codes of methods (pnpoly's between_method, use_method) are not ordered."""

    name = "default_onehot4"
    most = 4

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        most = type(self).most

        def widen(arm: Any) -> None:
            arm._extra = arm._extra + _one_hot_columns(arm.space, most)
            arm._Xp = np.zeros((0, arm._width()))  # the (empty) candidate matrix at the new width

        _after_bind(self.arms[self._model], widen)


class _PartnerGamma(DefaultEnsemble):
    gamma = 0.15

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        self.arms[self._partner].gamma = type(self).gamma


class PartnerGamma25(_PartnerGamma):
    """TPE's good quantile at Hyperopt's 0.25 (the default's partner keeps 0.15)."""

    name = "default_tpe_gamma25"
    gamma = 0.25


class PartnerGamma08(_PartnerGamma):
    """TPE's good quantile at 0.08 (a narrower good set: more exploitation)."""

    name = "default_tpe_gamma08"
    gamma = 0.08


class CappedTail(DefaultEnsemble):
    """The GP is fitted on values capped at the median of the finite results (worse values count as the
    median): its kernel then spends its variance on telling good configurations apart, not on the slow tail
    (W7800's values span 0.8 to 50+ around a median of 6.4)."""

    name = "default_capped"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        arm = self.arms[self._model]
        gp_data, target = arm._gp_data, arm._target
        arm._cap = float("inf")

        def _gp_data() -> list:
            data = gp_data()
            finite = [v for _, v in data]
            if len(finite) >= 4:
                arm._cap = float(np.median(finite))
                return [(c, min(v, arm._cap)) for c, v in data]
            return data

        def _target(value: float) -> float:
            return target(min(value, arm._cap))

        arm._gp_data, arm._target = _gp_data, _target
