"""FPGA flow flags tuner (yosys + nextpnr-ice40) with Bruel et al.'s weighted normalized sum; LegUp 4.0 space."""

from apps.hls_flags.app import HlsFlagsApp, list_designs
from apps.hls_flags.cost import SCENARIOS, weighted_normalized_sum
from apps.hls_flags.designs import DESIGNS
from apps.hls_flags.evaluator import HlsEvaluator

__all__ = ["DESIGNS", "SCENARIOS", "HlsEvaluator", "HlsFlagsApp", "list_designs", "weighted_normalized_sum"]
