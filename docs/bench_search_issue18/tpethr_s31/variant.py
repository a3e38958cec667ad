"""Session 31 candidate C: today's default (GP filtering at 0.7 beside TPE) with TPE filtering at 0.7 too.

Judged by ``rule.md`` beside this file, written before any run.  Nothing is fitted.
"""

from __future__ import annotations

from typing import Any, ClassVar

from techniques.default import DefaultEnsemble
from techniques.tpe import TPE


class BothThr07(DefaultEnsemble):
    """The default ensemble whose partner (TPE) ranks only candidates with P(success) >= 0.7, as its GP does."""

    name: ClassVar[str] = "default-both-thr0.7"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        for arm in self.arms:
            if isinstance(arm, TPE):
                arm.feasible_threshold = 0.7
