"""Static code metrics from ``ptxas -v``: registers, spills, stack, shared memory.

They need no GPU, so the compile-only objective can run in CI.  ptxas
prints, per entry function::

    ptxas info    : Compiling entry function '_Z6kernelPf' for 'sm_90'
    ptxas info    : Function properties for _Z6kernelPf
        0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
    ptxas info    : Used 30 registers, used 1 barriers, 2176 bytes smem, 384 bytes cmem[0]
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["KernelMetrics", "compile_cost", "parse_ptxas"]

_ENTRY = re.compile(r"Compiling entry function '([^']+)'")
_PROPS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
_USED = re.compile(r"Used (\d+) registers")
_SMEM = re.compile(r"(\d+) bytes smem")

#: weight of one spilled 4-byte word relative to one register in compile_cost:
#: a spill is a local-memory round trip, far dearer than a register
SPILL_WORD_WEIGHT = 8.0


@dataclass
class KernelMetrics:
    name: str
    registers: int = 0
    stack_bytes: int = 0
    spill_store_bytes: int = 0
    spill_load_bytes: int = 0
    smem_bytes: int = 0


def parse_ptxas(text: str) -> list[KernelMetrics]:
    """Per-kernel metrics in the order ptxas reports them (entry functions only)."""
    kernels: list[KernelMetrics] = []
    current: KernelMetrics | None = None
    for line in text.splitlines():
        m = _ENTRY.search(line)
        if m:
            current = KernelMetrics(m.group(1))
            kernels.append(current)
            continue
        if current is None:
            continue
        m = _PROPS.search(line)
        if m:
            current.stack_bytes, current.spill_store_bytes, current.spill_load_bytes = map(int, m.groups())
        m = _USED.search(line)
        if m:
            current.registers = int(m.group(1))
            s = _SMEM.search(line)
            current.smem_bytes = int(s.group(1)) if s else 0
    return kernels


def compile_cost(kernels: list[KernelMetrics]) -> float:
    """The compile-only objective: registers + weighted spill/stack words, summed over kernels.

    Fewer registers per thread allow more resident warps; spills and stack
    cost local-memory traffic.  A static proxy for speed, not a prediction of
    it: use it where no GPU is at hand (CI), and the runtime objective for
    real tuning.
    """
    if not kernels:
        raise ValueError("compile_cost(kernels=[]): ptxas reported no entry function; pass -Xptxas -v")
    return float(sum(k.registers + SPILL_WORD_WEIGHT * (k.spill_store_bytes + k.spill_load_bytes) / 4
                     + k.stack_bytes / 4 for k in kernels))
