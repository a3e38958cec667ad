"""``python -m apps.stencil --pattern star --dims 3 --radius 1 --backend opencl [tuner flags]``
or ``python -m apps.stencil --stencil j3d7pt --backend cuda [tuner flags]``."""

from __future__ import annotations

import sys

from apps.stencil.app import StencilApp


def main(argv: list[str] | None = None) -> int:
    return StencilApp.main(list(sys.argv[1:] if argv is None else argv), exit=False)


if __name__ == "__main__":
    sys.exit(main())
