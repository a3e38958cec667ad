"""Session 31 candidate: the default ensemble whose failure forest also reads the order of the values.

``feasibility="monotone"`` (techniques/feasibility.py): the calibrated forest of today's default plus four
inputs per point (a failure at or below it, a failure at or above it, a success at or below, a success at or
above; "below" = every ordered parameter at most its value, every unordered one equal).  Judged by
``rule.md`` beside this file, written before any search run.  Nothing is fitted to a space.
"""

from __future__ import annotations

from typing import Any, ClassVar

from techniques.default import DefaultEnsemble


class Monotone(DefaultEnsemble):
    """``DefaultEnsemble(feasibility="monotone")`` under a name of its own."""

    name: ClassVar[str] = "default-monotone"

    def __init__(self, **options: Any) -> None:
        options.setdefault("feasibility", "monotone")
        super().__init__(**options)
