"""``opentuner.tuningrunmain``: the pieces apps call directly (init_logging, main).

Why so little: OpenTuner's TuningRunMain wires its own drivers and database;
here ``MeasurementInterface.main`` does that through our drivers, so this
module keeps only what app code calls by name.
"""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["CleanStop", "init_logging", "main"]


class CleanStop(Exception):
    """Raised by OpenTuner code to end a run early; kept for apps that catch it."""


def init_logging() -> None:
    """OpenTuner configures the root logger here; we leave logging to ensemble's own handler."""


def main(interface: Any, args: argparse.Namespace, *pargs: Any, **kwargs: Any) -> int:
    """Tune an interface instance's class with ``args`` (OpenTuner's module-level main)."""
    from ensemble.compat.opentuner._run import run_interface

    return run_interface(type(interface), args, pargs, kwargs, interface=interface)
