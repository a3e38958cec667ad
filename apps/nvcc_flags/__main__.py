"""``python -m apps.nvcc_flags --program NAME --objective runtime|compile [tuner flags]`` or ``--list``."""

from __future__ import annotations

import sys
from typing import Any

from apps.flags.report import main_with_summary, summarize
from apps.nvcc_flags.app import NvccFlagsApp, list_programs


def _summary(app: Any, result: Any) -> None:
    compile_only = app.evaluator.objective == "compile"
    summarize(app, result, [("-O3", app.seed_configurations()[0])],
              unit="(ptxas cost)" if compile_only else "ms", scale=1.0 if compile_only else 1e3)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--list" in args:
        print(list_programs())
        return 0
    return main_with_summary(NvccFlagsApp, args, _summary)


if __name__ == "__main__":
    sys.exit(main())
