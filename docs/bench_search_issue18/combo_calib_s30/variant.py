"""The default ensemble with both session-29 options on: TPE shares the GP's lead (partner="TPE") and the
failure forest is calibrated (feasibility="calibrated").  For the session-30 check; the rule it is judged
by is in ``rule.md`` beside this file, written before the run."""

from __future__ import annotations

from typing import Any, ClassVar

from techniques.default import DefaultEnsemble


class PartnerCalibrated(DefaultEnsemble):
    name: ClassVar[str] = "default-tpe-calibrated"

    def __init__(self, **options: Any) -> None:
        super().__init__(partner="TPE", feasibility="calibrated", **options)
