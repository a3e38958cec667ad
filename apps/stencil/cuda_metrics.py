"""Nsight Compute metrics of one CUDA stencil configuration (``StencilApp --metrics ncu``).

Runs :mod:`apps.stencil.ncu_probe` under ``ncu`` with csTuner's metric set
(``measurement.cuda.NCU_METRICS``).  A profile that fails leaves the trial's
timing intact: the trial is stored without those metrics and the reason is
logged, so CsTuner falls back to modelling the objective for it.
"""

from __future__ import annotations

import json
import logging
import sys
from typing import Any

_log = logging.getLogger("ensemble.apps.stencil")


def nsight_metrics(args: Any, config: dict[str, Any]) -> dict[str, float]:
    """``{ncu metric: value}`` for ``config``, or ``{}`` when the profile failed (logged)."""
    from ensemble.errors import EnsembleError
    from measurement.cuda import ncu_profile

    argv = [sys.executable, "-m", "apps.stencil.ncu_probe", "--stencil", str(args.stencil),
            "--config", json.dumps(config)]
    if getattr(args, "size", None):
        argv += ["--size", str(args.size)]
    if getattr(args, "device", None) is not None:
        argv += ["--device", str(args.device)]
    try:
        return ncu_profile(argv, kernel="regex:stencil")
    except EnsembleError as exc:
        _log.warning("--metrics ncu: no metrics for this trial (%s)", exc)
        return {}
