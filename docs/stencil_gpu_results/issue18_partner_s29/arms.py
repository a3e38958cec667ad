"""The two arms of call1.sh: the default with TPE as its partner in the lead, and the default as it is."""

from __future__ import annotations

from typing import Any, ClassVar

from techniques.default import DefaultEnsemble


class WithTPE(DefaultEnsemble):
    """``DefaultEnsemble(partner="TPE")`` under a name of its own (bench_stencil_gpu takes technique names)."""

    name: ClassVar[str] = "default-partner-tpe"

    def __init__(self, **options: Any) -> None:
        super().__init__(partner="TPE", **options)
