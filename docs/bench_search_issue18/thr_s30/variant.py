"""Session 30 screen: the new default with its GP filtering at P(success) >= 0.7 instead of 0.5 (TPE unchanged).

Judged by ``rule.md`` beside this file, written before the run.
"""

from __future__ import annotations

from typing import Any, ClassVar

from techniques.bayes_opt import BayesOpt
from techniques.default import DefaultEnsemble


class GPThr07(DefaultEnsemble):
    name: ClassVar[str] = "default-gp-thr0.7"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        for arm in self.arms:
            if isinstance(arm, BayesOpt):
                arm.feasible_threshold = 0.7
