"""Session 35's candidate, for bench_search's ``--techniques`` (module:Class): the default with its model's
initial design screened by the failure model (``model_screen_design=True``; screen_rule.md beside this file)."""

from __future__ import annotations

from typing import Any

from techniques.default import DefaultEnsemble


class Screened(DefaultEnsemble):
    """The default of record with ``model_screen_design=True``."""

    name = "default_screened"

    def __init__(self, **options: Any) -> None:
        options.setdefault("model_screen_design", True)
        super().__init__(**options)
