"""The default ensemble with the calibrated failure forest (feasibility="calibrated"), for the session-29 screen."""

from __future__ import annotations

from typing import Any, ClassVar

from techniques.default import DefaultEnsemble


class Calibrated(DefaultEnsemble):
    name: ClassVar[str] = "default-calibrated"

    def __init__(self, **options: Any) -> None:
        super().__init__(feasibility="calibrated", **options)
