"""Run LegUp for one configuration of its HLS parameters, read the hardware metrics, score them.

What the original tuner did per configuration (github.com/phrb/legup-tuner,
``post_place_and_route/py/measure.sh``): in a LegUp 4.0 example directory
(``examples/chstone/NAME``) replace ``config.tcl``, then run

==========  ===========================================  =============
``make``    HLS: C -> LLVM -> Verilog                     no limit
``make v``  ModelSim simulation, prints ``Cycles: N``     600 s
``make p``  create the Quartus project                    900 s
``make f``  Quartus fit and timing analysis               900 s
==========  ===========================================  =============

and read Fmax from ``top.sta.rpt`` (table lines ``; 123.45 MHz ; ...``) and
the area from ``top.fit.summary`` (``Logic utilization``, ``Total pins``,
``Total registers``, ``Total block memory bits``, ``Total RAM Blocks``,
``Total DSP Blocks``).  :class:`LegupRunner` does the same with two
differences: every configuration gets a fresh copy of the example directory
(a sibling of it, so the example's relative paths -- ``LEVEL = ../..`` in its
Makefile, ``source ../../legup.tcl`` in config.tcl -- resolve as in the
original), and every step runs through :func:`measurement.process.run_command`
(argv lists, never a shell; whole process group killed at the time limit;
typed FAILED/TIMEOUT).  The metrics are counts, not the rounded percentages
of the device that measure.sh extracted for most of them (``( < 1 % )`` read
as 1), so small changes are not lost.

The flow is either the LegUp 4.0 Makefile targets above (``flow="make"``)
or, when a ``legup`` command is on PATH, that command's steps
``legup hw`` / ``legup sim`` / ``legup fpga`` (``flow="legup"``; the step
names of LegUp's later command-line driver).  Both are lists of
:class:`LegupStep` that a caller can replace.

**Not run against a real LegUp here**: LegUp 4.0 (with its LLVM, ModelSim and
Quartus) cannot be installed on this machine.  tests/apps/test_hls_flags.py
runs this module against a mock ``legup`` script that writes the report
files in the format parsed below.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from apps.flags.evaluation import Evaluation
from apps.flags.space import FlagSpace
from apps.hls_flags.cost import SCENARIOS
from apps.hls_flags.flow import FlowResult, score_flow
from apps.hls_flags.legup import legup_available, legup_space, write_config_tcl
from measurement.process import CommandState, run_command

__all__ = ["DEFAULT_BOARD", "LegupEvaluator", "LegupRunner", "LegupStep", "legup_command_steps", "make_steps",
           "parse_cycles", "parse_fit_summary", "parse_sta_fmax"]

#: the original tuner's board (its CycloneV runs used the CycloneV board instead)
DEFAULT_BOARD = "StratixV DE5-Net Tiger_DDR3"


@dataclass(frozen=True)
class LegupStep:
    """One command of the flow, run in the work directory with its own time limit (seconds)."""

    name: str
    argv: tuple[str, ...]
    timeout: float | None


def make_steps(make: str = "make") -> tuple[LegupStep, ...]:
    """The LegUp 4.0 Makefile targets of the original measure.sh, with its limits (900 s for the HLS step)."""
    return (LegupStep("hls", (make,), 900.0), LegupStep("simulate", (make, "v"), 600.0),
            LegupStep("project", (make, "p"), 900.0), LegupStep("fit", (make, "f"), 900.0))


def legup_command_steps(legup: str = "legup") -> tuple[LegupStep, ...]:
    """The same flow through a ``legup`` command: HLS, simulation (cycles), FPGA synthesis/fit/timing."""
    return (LegupStep("hls", (legup, "hw"), 900.0), LegupStep("simulate", (legup, "sim"), 600.0),
            LegupStep("fit", (legup, "fpga"), 1800.0))


# -- report parsing ------------------------------------------------------------------------------

_CYCLES = re.compile(r"Cycles:\s*(\d+)")
_FMAX = re.compile(r"^;\s*(\d+(?:\.\d+)?)\s*MHz\s*;", re.MULTILINE)
_NUM = r"\d[\d,]*"
_USED_OF = re.compile(rf"^\s*({_NUM})(?:\s*/\s*({_NUM}))?")

#: fit-summary lines for each cost metric, first found wins (Stratix V / Cyclone V names, then Cyclone IV's)
FIT_KEYS: dict[str, tuple[str, ...]] = {
    "lu": ("Logic utilization (in ALMs)", "Logic utilization", "Total logic elements"),
    "regs": ("Total registers",),
    "pins": ("Total pins",),
    "block": ("Total block memory bits", "Total memory bits"),
    "ram": ("Total RAM Blocks",),
    "dsp": ("Total DSP Blocks", "Embedded Multiplier 9-bit elements"),
}


def parse_cycles(text: str) -> int | None:
    """The cycle count the simulation prints (``# Cycles:  12345``; the last one if several)."""
    found = _CYCLES.findall(text)
    return int(found[-1]) if found else None


def parse_sta_fmax(text: str) -> float:
    """Fmax (MHz) from a Quartus ``.sta.rpt``: the lowest of its Fmax summary lines (slowest corner/clock)."""
    values = [float(v) for v in _FMAX.findall(text)]
    if not values:
        raise ValueError("timing report has no Fmax line ('; N MHz ; ...')")
    return min(values)


def parse_fit_summary(text: str) -> tuple[dict[str, float], dict[str, float]]:
    """(used, available) per cost metric from a Quartus ``.fit.summary`` (``Key : used / total ( p % )``)."""
    fields: dict[str, str] = {}
    for line in text.splitlines():
        key, sep, value = line.partition(" : ")
        if sep:
            fields.setdefault(key.strip(), value.strip())
    status = fields.get("Fitter Status", "")
    if status and not status.startswith("Successful"):
        raise ValueError(f"fitter status: {status}")
    used: dict[str, float] = {}
    available: dict[str, float] = {}
    for metric, keys in FIT_KEYS.items():
        found = next((fields[k] for k in keys if k in fields), None)
        m = _USED_OF.match(found) if found is not None else None
        if m is None:
            raise ValueError(f"fit summary has no {keys[0]!r} line")
        used[metric] = float(m.group(1).replace(",", ""))
        if m.group(2):
            available[metric] = float(m.group(2).replace(",", ""))
    return used, available


# -- the runner ----------------------------------------------------------------------------------

class LegupRunner:
    """Write config.tcl into a fresh copy of ``project_dir`` and run the LegUp flow there.

    ``flow``: "legup" (the ``legup`` command's steps), "make" (LegUp 4.0
    Makefile targets) or None: "legup" when the command is on PATH, else
    "make".  ``steps`` replaces the flow's steps.  ``board`` is written as
    ``set_project <board>`` for the make flow (None: leave the example's).
    """

    def __init__(self, project_dir: str | os.PathLike[str], *, flow: str | None = None,
                 steps: Sequence[LegupStep] | None = None, space: FlagSpace | None = None,
                 fixed_lines: list[str] | None = None, board: str | None = DEFAULT_BOARD,
                 legup: str = "legup", make: str = "make", sta_report: str = "top.sta.rpt",
                 fit_summary: str = "top.fit.summary", keep: bool = False) -> None:
        self.project = Path(project_dir).resolve()
        if not self.project.is_dir():
            raise ValueError(f"LegUp project {str(self.project)!r} is not a directory (give a LegUp example "
                             "directory such as legup-4.0/examples/chstone/dfadd)")
        chosen = flow or ("legup" if legup_available(legup) else "make")
        if chosen not in ("legup", "make"):
            raise ValueError(f"flow={flow!r}: use 'legup' or 'make'")
        self.flow = chosen
        self.steps = tuple(steps) if steps is not None else (
            legup_command_steps(legup) if chosen == "legup" else make_steps(make))
        fs, data = legup_space()
        self.space = space or fs
        if fixed_lines is None:
            fixed_lines = []
            for line in data.get("fixed_lines_written_to_config_tcl", []):
                if line.startswith("set_project"):
                    if chosen == "make" and board:
                        fixed_lines.append(f"set_project {board}")
                elif line.startswith("source") and chosen != "make":
                    continue  # LegUp 4.0's example-tree Tcl files
                else:
                    fixed_lines.append(line)
        self.fixed_lines = fixed_lines
        self.sta_report = sta_report
        self.fit_summary = fit_summary
        self.keep = keep
        self._lock = threading.Lock()

    def _workdir(self) -> str:
        with self._lock:  # a sibling of the project: its relative paths stay valid
            work = tempfile.mkdtemp(prefix=f".{self.project.name}-tune-", dir=self.project.parent)
        shutil.copytree(self.project, work, dirs_exist_ok=True,
                        ignore=shutil.ignore_patterns(".*-tune-*", "*.sof", "db", "incremental_db"))
        return work

    def run(self, config: Mapping[str, Any], limit: float | None = None) -> FlowResult:
        """Metrics of ``config`` or a typed failure; ``limit`` (seconds) bounds the whole flow."""
        res = FlowResult()
        work = self._workdir()
        try:
            write_config_tcl(config, Path(work) / "config.tcl", self.space, self.fixed_lines)
            start = time.monotonic()
            cycles: int | None = None
            for step in self.steps:
                timeout = step.timeout
                if limit is not None:
                    left = limit - (time.monotonic() - start)
                    if left <= 0:
                        res.failure = Evaluation("TIMEOUT", reason=f"time limit of {limit:g} s reached before "
                                                                   f"step {step.name!r}")
                        return res
                    timeout = left if timeout is None else min(timeout, left)
                out = run_command(list(step.argv), timeout=timeout, cwd=work, max_output=1 << 20)
                res.seconds += out.wall_time
                if not out.ok:
                    res.failure = _failure(step, out)
                    return res
                if step.name == "simulate":
                    cycles = parse_cycles(out.stdout + "\n" + out.stderr)
                    if cycles is None:
                        res.failure = Evaluation("FAILED", reason=f"{' '.join(step.argv)}: the simulation printed "
                                                                  "no 'Cycles: N' line")
                        return res
            try:
                fmax = parse_sta_fmax((Path(work) / self.sta_report).read_text(errors="replace"))
                used, available = parse_fit_summary((Path(work) / self.fit_summary).read_text(errors="replace"))
            except (OSError, ValueError) as exc:
                res.failure = Evaluation("FAILED", reason=f"cannot read the LegUp/Quartus reports: {exc}")
                return res
            if cycles is None:
                res.failure = Evaluation("FAILED", reason="no simulation step reported the cycle count")
                return res
            res.metrics = {"cycles": float(cycles), "fmax_mhz": fmax, "wct": cycles / fmax * 1e3, **used,
                           "luts": used["lu"], "ffs": used["regs"], "bram": used["ram"]}
            res.available = available
            return res
        finally:
            if not self.keep:
                shutil.rmtree(work, ignore_errors=True)


def _failure(step: LegupStep, out: Any) -> Evaluation:
    state = "TIMEOUT" if out.state is CommandState.TIMEOUT else "FAILED"
    lines = [ln.strip() for ln in (out.stderr + "\n" + out.stdout).splitlines()
             if "error" in ln.lower()]
    detail = (lines or [ln.strip() for ln in out.stderr.splitlines() if ln.strip()] or [""])[0][:300]
    return Evaluation(state, reason=f"{' '.join(step.argv)} ({step.name}) {out.reason}: {detail}".rstrip(": "))


class LegupEvaluator:
    """LegUp configurations of one project scored by Bruel's weighted normalized sum (default = 1.0).

    The same interface as :class:`apps.hls_flags.evaluator.HlsEvaluator`, so
    ``HlsFlagsApp`` tunes either (``--legup-project DIR``).
    """

    #: metrics the app's closing summary compares with the default's
    summary_metrics = ("fmax_mhz", "cycles", "wct", "luts", "ffs", "pins", "block", "bram", "dsp")

    def __init__(self, project_dir: str | os.PathLike[str], *, scenario: str = "balanced",
                 **runner_kw: Any) -> None:
        if scenario not in SCENARIOS:
            raise ValueError(f"--scenario {scenario!r}: choose one of {sorted(SCENARIOS)}")
        self.scenario = scenario
        self.runner = LegupRunner(project_dir, **runner_kw)
        self.flags = self.runner.space
        self._baseline: FlowResult | None = None

    def baseline(self) -> FlowResult:
        """The default configuration's result (run once): the normaliser of the cost."""
        if self._baseline is None:
            res = self.runner.run(self.flags.default_config())
            if res.failure is not None:
                raise RuntimeError(f"default LegUp flow of {self.runner.project.name} failed: {res.failure.reason}")
            self._baseline = res
        return self._baseline

    def score(self, res: FlowResult) -> Evaluation:
        return res.failure if res.failure is not None else score_flow(res, self.baseline(), self.scenario)

    def evaluate(self, config: Mapping[str, Any], limit: float | None = None) -> Evaluation:
        self.flags.render(dict(config))  # validates, dependencies included
        return self.score(self.runner.run(config, limit))

    def close(self) -> None:
        """Nothing to remove: every run deletes its own work directory."""
