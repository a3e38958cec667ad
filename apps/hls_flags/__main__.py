"""``python -m apps.hls_flags --design NAME --scenario area|performance|perflat|balanced`` or ``--list``.

``--legup-project DIR`` tunes LegUp's parameters for a LegUp example directory instead of the iCE40 flow.
"""

from __future__ import annotations

import sys
from typing import Any

from apps.flags.report import main_with_summary, summarize
from apps.hls_flags.app import HlsFlagsApp, list_designs

#: metrics of the iCE40 flow compared with the default's in the closing summary
SUMMARY_METRICS = ("fmax_mhz", "wct", "luts", "ffs", "carry", "bram", "dsp", "pins")


def _summary(app: Any, result: Any) -> None:
    summarize(app, result, [("default", app.seed_configurations()[0])], unit="(cost)")
    if result.best_config is not None:
        best = app.evaluator.evaluate(result.best_config).metrics  # deterministic flow: re-run for metrics
        base = app.evaluator.baseline().metrics
        keys = getattr(app.evaluator, "summary_metrics", SUMMARY_METRICS)
        print("best / default per metric: " + ", ".join(
            f"{k} {best[k] / base[k]:.2f}" if base[k] else f"{k} 0->{best[k]:g}"
            for k in keys if k in best and k in base))


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--list" in args:
        print(list_designs())
        return 0
    return main_with_summary(HlsFlagsApp, args, _summary)


if __name__ == "__main__":
    sys.exit(main())
