"""``python -m apps.hls_flags --design NAME --scenario area|performance|perflat|balanced`` or ``--list``."""

from __future__ import annotations

import sys

from apps.hls_flags.app import HlsFlagsApp, list_designs


def main(argv: list[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    if "--list" in args:
        print(list_designs())
        return 0
    return HlsFlagsApp.main(args)


if __name__ == "__main__":
    sys.exit(main())
