"""``python -m apps.gcc_flags --program NAME [tuner flags]`` or ``--list``."""

from __future__ import annotations

import sys
from typing import Any

from apps.flags.report import main_with_summary, summarize
from apps.gcc_flags.app import GccFlagsApp, list_programs


def _summary(app: Any, result: Any) -> None:
    seeds = app.seed_configurations()  # -O2, -O3, -O1
    summarize(app, result, [("-O1", seeds[2]), ("-O2", seeds[0]), ("-O3", seeds[1])], unit="ms", scale=1e3)


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--list" in args:
        print(list_programs())
        return 0
    return main_with_summary(GccFlagsApp, args, _summary)


if __name__ == "__main__":
    sys.exit(main())
