"""One FPGA-flow configuration -> metrics -> Bruel's cost relative to the default."""

from __future__ import annotations

import itertools
import shutil
import threading
from typing import Any

from apps.flags.evaluation import Evaluation, owned_workdir
from apps.hls_flags.cost import SCENARIOS
from apps.hls_flags.designs import Design, design
from apps.hls_flags.flow import FlowResult, run_flow, score_flow
from apps.hls_flags.space import flow_space

__all__ = ["HlsEvaluator"]


class HlsEvaluator:
    """Runs the flow for configurations of one design and scores them in one scenario."""

    def __init__(self, design_name: str | Design, *, scenario: str = "balanced", device: str = "up5k",
                 icepack: bool = False, timeout: float = 300.0, workdir: str | None = None) -> None:
        self.design = design_name if isinstance(design_name, Design) else design(design_name)
        if scenario not in SCENARIOS:
            raise ValueError(f"--scenario {scenario!r}: choose one of {sorted(SCENARIOS)}")
        self.scenario = scenario
        self.device = device
        self.icepack = icepack
        self.timeout = timeout
        self.yosys_flags, self.nextpnr_flags, self.flags = flow_space(dsp=device == "up5k")
        self.workdir = owned_workdir(self, workdir, f"hlsflags-{self.design.name}-")
        self._counter = itertools.count()
        self._lock = threading.Lock()
        self._baseline: FlowResult | None = None

    def flow(self, config: dict[str, Any], limit: float | None = None) -> FlowResult:
        self.flags.render(config)  # validates, dependencies included
        y = self.yosys_flags.render({k: config[k] for k in self.yosys_flags.names})
        p = self.nextpnr_flags.render({k: config[k] for k in self.nextpnr_flags.names})
        with self._lock:
            sub = f"{self.workdir}/{next(self._counter)}"
        try:
            timeout = min(limit, self.timeout) if limit else self.timeout
            return run_flow(self.design, y, p, sub, device=self.device, icepack=self.icepack, timeout=timeout)
        finally:
            shutil.rmtree(sub, ignore_errors=True)

    def baseline(self) -> FlowResult:
        """The default configuration's flow result (computed once): the normaliser."""
        if self._baseline is None:
            res = self.flow(self.flags.default_config())
            if res.failure is not None:
                raise RuntimeError(f"default flow of {self.design.name} failed: {res.failure.reason}")
            self._baseline = res
        return self._baseline

    def score(self, res: FlowResult) -> Evaluation:
        return res.failure if res.failure is not None else score_flow(res, self.baseline(), self.scenario)

    def evaluate(self, config: dict[str, Any], limit: float | None = None) -> Evaluation:
        """Flow + cost; ``limit`` (seconds) bounds the whole flow (TIMEOUT beyond it)."""
        return self.score(self.flow(config, limit))

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)
