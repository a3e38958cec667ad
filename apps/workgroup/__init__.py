"""Cummins et al.'s work-group size prediction for stencils (ADAPT 2016): kernels, sweeps, features, service.

Only light modules are imported here; PyOpenCL loads when a device is used.
See docs/CUMMINS.md.
"""

from apps.workgroup.features import FEATURE_NAMES, KernelParseError, kernel_features
from apps.workgroup.kernels import (
           StencilKernel,
           opencl_source,
           real_world_kernels,
           synthetic_kernel,
)

__all__ = ["FEATURE_NAMES", "KernelParseError", "StencilKernel", "kernel_features", "opencl_source",
           "real_world_kernels", "synthetic_kernel"]
