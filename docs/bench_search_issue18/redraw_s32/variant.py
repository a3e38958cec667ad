"""Session 32 candidate: the default ensemble whose TPE partner draws again when no candidate is likely to run.

``redraws=4`` on the TPE arm (techniques/tpe.py): when none of a fit's 24 candidates reaches the threshold,
up to four more batches from l(x) before ranking them all.  Judged by ``rule.md`` beside this file, written
before any run.  Nothing is fitted to a space.
"""

from __future__ import annotations

from typing import Any, ClassVar

from techniques.default import DefaultEnsemble


class Redraw(DefaultEnsemble):
    """``DefaultEnsemble`` with its partner's ``redraws`` set to 4, under a name of its own."""

    name: ClassVar[str] = "default-redraw"

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        if self._partner is not None:
            self.arms[self._partner].redraws = 4
