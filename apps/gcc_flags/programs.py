"""The bundled C benchmarks of the gcc flags tuner.

Written for this project (not taken from a suite): each prints ``time_s``
(its own kernel time, so process start-up noise stays out of the
measurement) and ``key value`` output lines that are compared with the -O2
build.  ``kahan`` is the planted miscompile: correct under IEEE rules, wrong
under ``-ffast-math``/``-funsafe-math-optimizations``/``-ffinite-math-only``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["PROGRAMS", "Program", "program"]

PROGRAM_DIR = Path(__file__).resolve().parent / "programs"


@dataclass(frozen=True)
class Program:
    name: str
    source: str
    description: str
    rtol: float                 # relative tolerance of float outputs vs the -O2 build
    test_size: int              # argv[1] that makes it run in milliseconds (tests)

    @property
    def path(self) -> Path:
        return PROGRAM_DIR / self.source


PROGRAMS: dict[str, Program] = {p.name: p for p in (
    Program("matmul", "matmul.c", "double matrix multiply, naive i-j-k nest (n=320)", 1e-9, 48),
    Program("stencil3d", "stencil3d.c", "3D 7-point Jacobi, float, 40 sweeps of 112^3", 1e-6, 16),
    Program("sort", "sort.c", "quicksort of 1e6 64-bit keys, exact hash check", 0.0, 5000),
    Program("kahan", "kahan.c", "Kahan sum + isnan census: the planted fast-math miscompile", 1e-6, 200000),
)}


def program(name: str) -> Program:
    try:
        return PROGRAMS[name]
    except KeyError:
        raise ValueError(f"--program {name!r}: unknown; choose one of {sorted(PROGRAMS)} (see --list)") from None
