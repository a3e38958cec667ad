"""Session 31 candidate D: the default whose TPE partner sits out when the run's budget is under 100.

Judged by ``rule.md`` beside this file, written before any run.
"""

from __future__ import annotations

from typing import Any, ClassVar

from techniques.default import DefaultEnsemble


class SmallBudget(DefaultEnsemble):
    """``DefaultEnsemble(partner_min_budget=100)`` under a name of its own."""

    name: ClassVar[str] = "default-partner-from-100"

    def __init__(self, **options: Any) -> None:
        options.setdefault("partner_min_budget", 100)
        super().__init__(**options)
