"""The one error an app gets for a part of OpenTuner we do not provide.

Why one class with a fixed shape: the promise is "one clear error naming
that part and the nearest supported way, at start-up, before any
measurement"; building every such message here keeps them alike and lets
tests and docs/OPENTUNER.md quote them.
"""

from __future__ import annotations

from ensemble.errors import EnsembleError

__all__ = ["UnsupportedError"]


class UnsupportedError(EnsembleError, NotImplementedError):
    """``part`` of OpenTuner's API is not provided; ``instead`` says what to use."""

    def __init__(self, part: str, instead: str) -> None:
        self.part = part
        self.instead = instead
        super().__init__(f"OpenTuner compatibility: {part} is not supported; {instead} (see docs/OPENTUNER.md)")
