"""How a configuration becomes a number: processes, timing, OpenCL, CUDA.

Only light modules are imported here; ``measurement.opencl`` and
``measurement.cuda`` import their GPU libraries themselves, on use.
"""

from measurement.process import CommandOutcome, CommandState, run_command
from measurement.timing import TimingSummary, repeat, summarize

__all__ = ["CommandOutcome", "CommandState", "TimingSummary", "repeat", "run_command", "summarize"]
