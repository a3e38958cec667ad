"""The new arm of the session-30 GPU check: the default with TPE as its partner and the calibrated forest.

Run by ``ARM=docs.stencil_gpu_results.issue18_combo_s30.arms:PartnerCalibrated bash
docs/stencil_gpu_results/issue18_partner_s29/call1.sh`` (the rule: docs/bench_search_issue18/combo_calib_s30/rule.md).
"""

from __future__ import annotations

from typing import Any, ClassVar

from techniques.default import DefaultEnsemble


class PartnerCalibrated(DefaultEnsemble):
    """``DefaultEnsemble(partner="TPE", feasibility="calibrated")`` under a name of its own."""

    name: ClassVar[str] = "default-tpe-calibrated"

    def __init__(self, **options: Any) -> None:
        super().__init__(partner="TPE", feasibility="calibrated", **options)


class ModelAlone(DefaultEnsemble):
    """The default ensemble as it was before session 30: the GP leads alone, with the plain failure forest.

    Since session 30 a plain ``default`` is the partner with the calibrated forest, so call1.sh's "old" arm (no
    ``--technique``) runs the new default; a search meant to repeat the earlier default passes
    ``--technique docs.stencil_gpu_results.issue18_combo_s30.arms:ModelAlone`` (or ``--technique default
    --technique-option partner=null --technique-option feasibility=forest``; bench_stencil_gpu takes options
    since session 30).
    """

    name: ClassVar[str] = "default-model-alone"

    def __init__(self, **options: Any) -> None:
        super().__init__(partner=None, feasibility="forest", **options)
