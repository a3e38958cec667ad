"""Bundled Verilog designs of the FPGA flow tuner (written for this project).

``cycles`` is the design's known latency for its reference workload (the
RTL fixes it; synthesis and place-and-route options do not change it), so
the wall-clock time of the workload is ``cycles / Fmax``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

__all__ = ["DESIGNS", "Design", "design"]

DESIGN_DIR = Path(__file__).resolve().parent / "designs"


@dataclass(frozen=True)
class Design:
    name: str
    source: str
    top: str
    cycles: int
    description: str

    @property
    def path(self) -> Path:
        return DESIGN_DIR / self.source


DESIGNS: dict[str, Design] = {d.name: d for d in (
    # 4 coefficient loads + 1024 samples at one per cycle + 2 cycles of output latency
    Design("fir", "fir.v", "fir", 4 + 1024 + 2, "4-tap FIR, 8-bit, programmable coefficients (multipliers)"),
    # a 64x64 frame, one pixel per cycle, + 2-line fill + 5-stage pipeline
    Design("stencil", "stencil.v", "stencil", 64 * 64 + 2 * 64 + 5, "3x3 blur over 64-wide stream, 2 line buffers"),
    # 4096 bytes at one byte per cycle + 1 cycle to read the result
    Design("crc32", "crc32.v", "crc32", 4096 + 1, "byte-wide CRC-32 core"),
)}


def design(name: str) -> Design:
    try:
        return DESIGNS[name]
    except KeyError:
        raise ValueError(f"--design {name!r}: unknown; choose one of {sorted(DESIGNS)} (see --list)") from None
