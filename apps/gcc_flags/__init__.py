"""gcc flags tuner: installed gcc's flags and params, bundled C benchmarks, output checked against -O2."""

from apps.gcc_flags.app import GccFlagsApp, list_programs
from apps.gcc_flags.evaluator import GccEvaluator
from apps.gcc_flags.programs import PROGRAMS

__all__ = ["PROGRAMS", "GccEvaluator", "GccFlagsApp", "list_programs"]
