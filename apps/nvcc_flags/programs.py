"""The bundled CUDA programs of the nvcc flags tuner (written for this project).

Matrix multiply in the four memory variants of Bruel et al. (CCPE 2017)
(global/shared memory x coalesced/uncoalesced accesses, one source selected
with -D macros), Gaussian elimination, a 3D 7-point stencil and
``precision``, the planted miscompile (correct under IEEE float, wrong under
the fast-math family of flags; see programs/precision.cu).  Each writes
its float32 result to argv[1] (compared with the -O3 build) and prints the
median kernel time ``time_ms``; argv[2] is the problem size.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["PROGRAMS", "CudaProgram", "cuda_program"]

PROGRAM_DIR = Path(__file__).resolve().parent / "programs"


@dataclass(frozen=True)
class CudaProgram:
    name: str
    source: str
    description: str
    defines: tuple[str, ...] = field(default=())
    rtol: float = 1e-3           # float32 kernels: fast-math and FMA contraction move the last bits
    atol_scale: float = 1e-5     # absolute tolerance as a fraction of max |reference|
    test_size: int = 64

    @property
    def path(self) -> Path:
        return PROGRAM_DIR / self.source


PROGRAMS: dict[str, CudaProgram] = {p.name: p for p in (
    CudaProgram("matmul_global_coalesced", "matmul.cu", "1024^2 SGEMM, global memory, coalesced",
                ("-DMM_SHARED=0", "-DMM_COALESCED=1")),
    CudaProgram("matmul_global_uncoalesced", "matmul.cu", "1024^2 SGEMM, global memory, strided accesses",
                ("-DMM_SHARED=0", "-DMM_COALESCED=0")),
    CudaProgram("matmul_shared_coalesced", "matmul.cu", "1024^2 SGEMM, 16x16 shared-memory tiles, coalesced",
                ("-DMM_SHARED=1", "-DMM_COALESCED=1")),
    CudaProgram("matmul_shared_uncoalesced", "matmul.cu", "1024^2 SGEMM, shared-memory tiles, strided loads",
                ("-DMM_SHARED=1", "-DMM_COALESCED=0")),
    CudaProgram("gaussian", "gaussian.cu", "Gaussian elimination, 1024 unknowns, 2 kernels per pivot",
                rtol=1e-3, test_size=32),
    CudaProgram("stencil7", "stencil7.cu", "3D 7-point Jacobi, 256^3 floats, 10 sweeps", test_size=24),
    CudaProgram("precision", "precision.cu",
                "planted miscompile: subnormal round trip + division residuals, 2^22 each "
                "(wrong under --use_fast_math, --ftz=true, --prec-div=false)", test_size=4096),
)}


def cuda_program(name: str) -> CudaProgram:
    try:
        return PROGRAMS[name]
    except KeyError:
        raise ValueError(f"--program {name!r}: unknown; choose one of {sorted(PROGRAMS)} (see --list)") from None
