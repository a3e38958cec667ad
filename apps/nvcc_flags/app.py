"""The nvcc flags tuner app (Bruel et al., CCPE 2017, brought to CUDA 13).

``--objective runtime`` measures the bundled program on the GPU and rejects
builds whose output differs from the ``nvcc -O3`` build; ``--objective
compile`` needs no GPU and minimises a static cost from ``ptxas -v``
(registers, spills, stack), which is what CI tunes.
"""

from __future__ import annotations

import argparse
import logging
from typing import Any

from apps.nvcc_flags.evaluator import CudaBuild, NvccEvaluator
from apps.nvcc_flags.programs import PROGRAMS
from ensemble.app import TunerApp

__all__ = ["NvccFlagsApp", "list_programs"]

log = logging.getLogger("ensemble.apps.nvcc_flags")


def list_programs() -> str:
    return "\n".join(f"{p.name:27s} {p.description}" for p in PROGRAMS.values())


class NvccFlagsApp(TunerApp):
    """Tune nvcc/ptxas/nvlink flags for a bundled CUDA program."""

    def __init__(self, args: argparse.Namespace | None = None, **overrides: Any) -> None:
        super().__init__(args)
        opts: dict[str, Any] = {"program": "matmul_shared_coalesced", "objective": "runtime",
                                "gpu_arch": None, "nvcc": "nvcc", "size": None}
        opts.update({k: getattr(self.args, k) for k in opts if getattr(self.args, k, None) is not None})
        opts.update(overrides)
        self.evaluator = NvccEvaluator(opts["program"], objective=opts["objective"], target=opts["gpu_arch"],
                                       nvcc=opts["nvcc"], size=opts["size"])
        log.info("target %s (%s)", self.evaluator.target, self.evaluator.gpu.source)

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--program", default="matmul_shared_coalesced", choices=sorted(PROGRAMS),
                            help="bundled CUDA program (see --list)")
        parser.add_argument("--objective", default="runtime", choices=["runtime", "compile"],
                            help="runtime: kernel time on the GPU; compile: ptxas static cost, no GPU")
        parser.add_argument("--gpu-arch", default=None,
                            help="target GPU architecture, e.g. sm_90 (default: the GPU present, from nvidia-smi "
                                 "or PyCUDA; sm_90 when there is none)")
        parser.add_argument("--nvcc", default="nvcc", help="nvcc to use")
        parser.add_argument("--size", type=int, default=None, help="problem size (argv[2] of the program)")
        parser.add_argument("--list", action="store_true", help="list the bundled programs and exit")

    def space(self) -> Any:
        return self.evaluator.flags.to_search_space()

    def objective(self) -> Any:
        from ensemble.objective import Minimize

        return Minimize("compile_cost" if self.evaluator.objective == "compile" else "time")

    def seed_configurations(self) -> list[dict[str, Any]]:
        """The plain -O3 build: the baseline the speedup is reported against."""
        return [self.evaluator.flags.default_config()]

    def compile(self, config: dict[str, Any]) -> CudaBuild:
        return self.evaluator.compile(config)

    def run_compiled(self, config: dict[str, Any], artifact: CudaBuild, limit: float | None) -> Any:
        return self.evaluator.run(artifact, limit).to_result()

    def render(self, config: dict[str, Any]) -> list[str]:
        return self.evaluator.flags.render(config)
