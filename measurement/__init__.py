"""How a configuration becomes a number: processes, timing, OpenCL, CUDA.

Only light modules are imported here; ``measurement.opencl`` and
``measurement.cuda`` import their GPU libraries themselves, on use.
"""

from measurement.process import CommandOutcome, CommandState, run_command

__all__ = ["CommandOutcome", "CommandState", "run_command"]
