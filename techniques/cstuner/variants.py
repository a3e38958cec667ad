"""Named earlier defaults of CsTuner and the preset, for side-by-side replay runs.

Why: docs/CSTUNER.md compares the current defaults with the ones they
replaced in the same ``scripts/bench_search.py`` command; the benchmark takes
techniques as "module:attr", so the earlier settings need an importable name
(e.g. ``--techniques CsTuner,techniques.cstuner.variants:CsTunerJoint``).
They are not registered: they exist for the comparison, not for users.
"""

from __future__ import annotations

from typing import Any, ClassVar

from techniques.cstuner.ensemble import CsTunerEnsemble
from techniques.cstuner.technique import CsTuner

__all__ = ["CsTunerBeforeS16c", "CsTunerBeforeShare", "CsTunerEnsembleBeforeFollow", "CsTunerEnsembleJoint", "CsTunerEnsembleNewBest",
           "CsTunerJoint"]

#: the defaults before 2026-11-26: the joint grouped GA after the passes, every fitted PMNF model used
JOINT_UNCHECKED: dict[str, Any] = {"continuation": "joint", "model_check": None, "budget_share": False,
                                   "constants_aside": False}


class CsTunerJoint(CsTuner):
    """CsTuner with the defaults before 2026-11-26 (``continuation="joint"``, ``model_check=None``)."""

    name: ClassVar[str] = "CsTuner-joint"

    def __init__(self, *, seed: int | None = None, **options: Any) -> None:
        super().__init__(seed=seed, **{**JOINT_UNCHECKED, **options})


#: the defaults before the evening of 2026-11-26 (issue 12's replay target): no budget share
BEFORE_SHARE: dict[str, Any] = {"budget_share": False, "constants_aside": False}


class CsTunerBeforeShare(CsTuner):
    """CsTuner as committed before the budget share (``budget_share=False``, ``constants_aside=False``)."""

    name: ClassVar[str] = "CsTuner-before-share"

    def __init__(self, *, seed: int | None = None, **options: Any) -> None:
        super().__init__(seed=seed, **{**BEFORE_SHARE, **options})


#: CsTuner before session 16c: the approximate stop reads the top-n distinct settings measured in a group
BEFORE_S16C: dict[str, Any] = {"approximate_stop": "distinct"}


class CsTunerBeforeS16c(CsTuner):
    """CsTuner as it was before session 16c (``approximate_stop="distinct"``)."""

    name: ClassVar[str] = "CsTuner-before-s16c"

    def __init__(self, *, seed: int | None = None, **options: Any) -> None:
        super().__init__(seed=seed, **{**options, **BEFORE_S16C})


class CsTunerEnsembleJoint(CsTunerEnsemble):
    """cstuner-ensemble whose CsTuner arm has the defaults before 2026-11-26."""

    name: ClassVar[str] = "cstuner-ensemble-joint"

    def __init__(self, *, seed: int | None = None, cstuner: dict[str, Any] | None = None, **options: Any) -> None:
        super().__init__(seed=seed, cstuner={**JOINT_UNCHECKED, **(cstuner or {})}, **options)


class CsTunerEnsembleBeforeFollow(CsTunerEnsemble):
    """cstuner-ensemble as it was before session 15: its Nelder-Mead and annealing arms follow no one.

    OpenTuner's new-best credit, as then (session 16 made the rank credit the preset's default).
    """

    name: ClassVar[str] = "cstuner-ensemble-before-follow"

    def __init__(self, *, seed: int | None = None, **options: Any) -> None:
        super().__init__(seed=seed, **{"credit": "new-best", **options, "follow_incumbent": False})


class CsTunerEnsembleNewBest(CsTunerEnsemble):
    """cstuner-ensemble as it was before session 16: OpenTuner's new-best credit (``credit="new-best"``)."""

    name: ClassVar[str] = "cstuner-ensemble-new-best"

    def __init__(self, *, seed: int | None = None, **options: Any) -> None:
        super().__init__(seed=seed, **{**options, "credit": "new-best"})
