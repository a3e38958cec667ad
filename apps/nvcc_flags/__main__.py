"""``python -m apps.nvcc_flags --program NAME --objective runtime|compile [tuner flags]`` or ``--list``."""

from __future__ import annotations

import sys

from apps.nvcc_flags.app import NvccFlagsApp, list_programs


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--list" in args:
        print(list_programs())
        return 0
    return NvccFlagsApp.main(args)


if __name__ == "__main__":
    sys.exit(main())
