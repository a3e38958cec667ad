"""Stencil apps: generated OpenCL (Garvey) and CUDA (csTuner) kernels, checked against NumPy.

Only light modules are imported here; device backends load on first use.
"""

from apps.stencil.cstuner import CSTUNER_STENCILS, cstuner_stencil
from apps.stencil.cuda_gen import cuda_baseline, generate_cuda
from apps.stencil.opencl_gen import generate_opencl, opencl_baseline
from apps.stencil.patterns import PATTERNS, pattern_offsets, synthetic
from apps.stencil.spec import Stencil, make_stencil

__all__ = ["CSTUNER_STENCILS", "PATTERNS", "Stencil", "cstuner_stencil", "cuda_baseline", "generate_cuda",
           "generate_opencl", "make_stencil", "opencl_baseline", "pattern_offsets", "synthetic"]
