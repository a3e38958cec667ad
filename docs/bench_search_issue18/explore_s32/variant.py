"""Session 32 candidate: the default ensemble whose GP makes no exploring picks while TPE shares its lead.

The GP's ``explore_failures`` (0.05: a share of picks ranked by EI x P(success) over every candidate) set to 0
while the partner takes part; where it sits out the GP keeps 0.05.  Judged by ``rule.md`` beside this file,
written before any run.  Nothing is fitted to a space.
"""

from __future__ import annotations

from typing import ClassVar

from techniques.default import DefaultEnsemble


class NoExplore(DefaultEnsemble):
    """``DefaultEnsemble`` with the GP's exploring picks off beside the partner, under a name of its own."""

    name: ClassVar[str] = "default-noexplore"

    def _on_bind(self) -> None:
        super()._on_bind()
        if self._model is not None and self._partner is not None and self._partner not in self.inactive:
            self.arms[self._model].explore_failures = 0.0
