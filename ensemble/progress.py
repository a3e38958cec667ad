"""A live one-line progress display on a terminal, silent otherwise.

Why not logging: a progress line rewrites itself with a carriage return, which
only makes sense on a TTY; logs and CI output must stay clean (DESIGN.md).
Redrawing is rate-limited so that the hot path pays one clock read per trial.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any, TextIO

__all__ = ["Progress", "format_status"]


def format_status(status: Any, elapsed: float) -> str:
    """The progress text: trials, unique, failures, best, technique, rate."""
    best = "-" if not math.isfinite(status.best_value) else f"{status.best_value:.6g}"
    rate = status.trials / elapsed if elapsed > 0 else 0.0
    return (f"trials {status.trials}  unique {status.unique}  failures {status.failures}  "
            f"best {best}  technique {status.last_technique or '-'}  {rate:.1f}/s")


class Progress:
    """Redraws at most every ``interval`` seconds on a TTY stream."""

    def __init__(self, *, enabled: bool = True, stream: TextIO | None = None, interval: float = 0.2,
                 technique: str = "") -> None:
        self.stream = stream if stream is not None else sys.stderr
        isatty = getattr(self.stream, "isatty", lambda: False)
        self.enabled = enabled and bool(isatty())
        self.interval = interval
        self.technique = technique
        self._start = time.monotonic()
        self._next = 0.0
        self._drawn = False

    def update(self, status: Any) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if now < self._next:
            return
        self._next = now + self.interval
        line = format_status(status, now - self._start)
        self.stream.write("\r" + line[:160] + "\x1b[K")
        self.stream.flush()
        self._drawn = True

    def close(self, status: Any) -> None:
        if not self.enabled:
            return
        self._next = 0.0
        self.update(status)
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
