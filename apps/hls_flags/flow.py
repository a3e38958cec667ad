"""Run the open iCE40 flow (yosys -> nextpnr-ice40 -> optional icepack) and read its metrics.

Metrics come from files the tools write, not from scraping their logs:
the yosys JSON netlist (cell counts of the top module: SB_LUT4, SB_DFF*,
SB_CARRY, SB_RAM40_4K, SB_MAC16) and nextpnr's ``--report`` JSON (achieved
Fmax of the clock, SB_IO and logic-cell utilisation, device capacity).
nextpnr always runs with ``--timing-allow-fail``: missing a requested
frequency is a worse metric, not a failed configuration.
"""

from __future__ import annotations

import json
import os
import shutil
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from apps.flags.evaluation import Evaluation
from apps.hls_flags.cost import weighted_normalized_sum
from apps.hls_flags.designs import Design
from measurement.process import CommandState, run_command

__all__ = ["DEVICES", "FlowResult", "netlist_metrics", "report_metrics", "run_flow"]

#: nextpnr device flag and package of the supported parts
DEVICES: dict[str, tuple[str, str]] = {"up5k": ("--up5k", "sg48"), "hx8k": ("--hx8k", "ct256")}


@dataclass
class FlowResult:
    metrics: dict[str, float] = field(default_factory=dict)
    available: dict[str, float] = field(default_factory=dict)
    failure: Evaluation | None = None
    seconds: float = 0.0


def netlist_metrics(netlist: dict[str, Any], top: str) -> dict[str, float]:
    cells = Counter(c["type"] for c in netlist["modules"][top]["cells"].values())
    return {
        "luts": float(cells["SB_LUT4"]),
        "ffs": float(sum(n for t, n in cells.items() if t.startswith("SB_DFF"))),
        "carry": float(cells["SB_CARRY"]),
        "bram": float(cells["SB_RAM40_4K"]),
        "dsp": float(cells["SB_MAC16"]),
    }


def report_metrics(report: dict[str, Any]) -> tuple[dict[str, float], dict[str, float]]:
    """(metrics, capacity) from a nextpnr --report JSON."""
    fmax = report.get("fmax") or {}
    achieved = [v["achieved"] for v in fmax.values() if "achieved" in v]
    if not achieved:
        raise ValueError("nextpnr report has no achieved Fmax (design without a clock?)")
    util = report.get("utilization", {})
    used = {k: float(v.get("used", 0)) for k, v in util.items()}
    cap = {k: float(v.get("available", 0)) for k, v in util.items()}
    metrics = {"fmax_mhz": float(min(achieved)), "pins": used.get("SB_IO", 0.0), "lcs": used.get("ICESTORM_LC", 0.0)}
    available = {"dsp": cap.get("ICESTORM_DSP", 0.0), "ram": cap.get("ICESTORM_RAM", 0.0),
                 "lu": cap.get("ICESTORM_LC", 0.0)}
    return metrics, available


def _fail(stage: str, out: Any) -> Evaluation:
    state = "TIMEOUT" if out.state is CommandState.TIMEOUT else "FAILED"
    lines = [ln for ln in (out.stderr + "\n" + out.stdout).splitlines() if "ERROR" in ln or "error" in ln]
    detail = (lines or [""])[0].strip()[:300]
    return Evaluation(state, reason=f"{stage} {out.reason}: {detail}")


def run_flow(design: Design, yosys_opts: list[str], nextpnr_opts: list[str], workdir: str, *,
             device: str = "up5k", icepack: bool = False, timeout: float = 300.0,
             yosys: str = "yosys", nextpnr: str = "nextpnr-ice40") -> FlowResult:
    """Synthesise, place and route ``design`` in ``workdir``; metrics or a typed failure."""
    if device not in DEVICES:
        raise ValueError(f"device={device!r}: choose one of {sorted(DEVICES)}")
    os.makedirs(workdir, exist_ok=True)
    netlist = os.path.join(workdir, "netlist.json")
    report = os.path.join(workdir, "report.json")
    # a yosys command script, not a shell string: the options come from fixed choices
    script = (f"read_verilog {design.path}; synth_ice40 -top {design.top} "
              + " ".join(yosys_opts) + f" -json {netlist}")
    res = FlowResult()
    out = run_command([yosys, "-q", "-p", script], timeout=timeout, max_output=256 << 10)
    res.seconds += out.wall_time
    if not out.ok:
        res.failure = _fail("yosys", out)
        return res
    flag, package = DEVICES[device]
    argv = [nextpnr, flag, "--package", package, "--json", netlist, "--pcf-allow-unconstrained",
            "--timing-allow-fail", "--report", report, "-q", *nextpnr_opts]
    asc = os.path.join(workdir, "design.asc")
    if icepack:
        argv += ["--asc", asc]
    out = run_command(argv, timeout=max(timeout - res.seconds, 1.0), max_output=256 << 10)
    res.seconds += out.wall_time
    if not out.ok:
        res.failure = _fail("nextpnr", out)
        return res
    try:
        with open(netlist) as f:
            res.metrics.update(netlist_metrics(json.load(f), design.top))
        with open(report) as f:
            pm, res.available = report_metrics(json.load(f))
        res.metrics.update(pm)
    except (OSError, ValueError, KeyError) as exc:
        res.failure = Evaluation("FAILED", reason=f"cannot read flow outputs: {exc}")
        return res
    if icepack:
        out = run_command(["icepack", asc, os.path.join(workdir, "design.bin")], timeout=120)
        res.seconds += out.wall_time
        if not out.ok:
            res.failure = _fail("icepack", out)
            return res
    res.metrics["cycles"] = float(design.cycles)
    res.metrics["wct"] = design.cycles / res.metrics["fmax_mhz"] * 1e3  # ns: cycles x period
    res.metrics.update({"lu": res.metrics["luts"], "regs": res.metrics["ffs"], "block": res.metrics["carry"],
                        "ram": res.metrics["bram"]})
    return res


def score_flow(res: FlowResult, base: FlowResult, scenario: str) -> Evaluation:
    """A flow's Evaluation: Bruel's weighted normalized cost against the default's flow ``base``.

    The time is the workload's wall time (cycles / Fmax); the cost and the
    flow's own seconds go into the metrics. Shared by the yosys/nextpnr and
    the LegUp evaluators, so both apps score a configuration the same way.
    """
    if res.failure is not None:
        return res.failure
    cost = weighted_normalized_sum(res.metrics, base.metrics, scenario, res.available)
    seconds = res.metrics["cycles"] / (res.metrics["fmax_mhz"] * 1e6)
    return Evaluation("OK", time=seconds, times=[seconds],
                      metrics={**res.metrics, "cost": cost, "flow_s": res.seconds})


def tools_available(device: str = "up5k") -> bool:
    return all(shutil.which(t) for t in ("yosys", "nextpnr-ice40"))
