"""Replay: tune over a recorded, exhaustively measured space.

Loads Kernel Tuner caches, T4 output and CSV tables into a
:class:`RecordedSpace`, and runs a tuner over it charging each evaluation its
recorded cost (``python -m apps.replay FILE ...``; see docs/REPLAY.md).
"""

from apps.replay.loaders import (
    detect_format,
    load_csv,
    load_kernel_tuner_cache,
    load_space,
    load_t4,
)
from apps.replay.model import SPACE_MODES, Record, RecordedSpace

__all__ = [
    "SPACE_MODES",
    "Record",
    "RecordedSpace",
    "detect_format",
    "load_csv",
    "load_kernel_tuner_cache",
    "load_space",
    "load_t4",
]
