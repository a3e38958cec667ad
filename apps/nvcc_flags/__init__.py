"""nvcc flags tuner: Bruel et al.'s nvcc/ptxas/nvlink space for CUDA 13, runtime and compile-only objectives."""

from apps.nvcc_flags.app import NvccFlagsApp, list_programs
from apps.nvcc_flags.evaluator import NvccEvaluator
from apps.nvcc_flags.programs import PROGRAMS
from apps.nvcc_flags.space import nvcc_flag_space

__all__ = ["PROGRAMS", "NvccEvaluator", "NvccFlagsApp", "list_programs", "nvcc_flag_space"]
