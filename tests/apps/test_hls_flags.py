"""FPGA flow tuner: Bruel's cost, option dependencies, the yosys/nextpnr flow, LegUp space."""

from __future__ import annotations

import os
import shutil
import sys
from pathlib import Path

import pytest

from apps.hls_flags.cost import SCENARIOS, weighted_normalized_sum
from apps.hls_flags.space import flow_space

HAS_FLOW = all(shutil.which(t) for t in ("yosys", "nextpnr-ice40"))
needs_flow = pytest.mark.skipif(not HAS_FLOW, reason="yosys/nextpnr-ice40 not installed")

BASE = {"wct": 100.0, "lu": 50.0, "pins": 20.0, "regs": 40.0, "block": 10.0, "ram": 2.0, "dsp": 0.0}


def test_cost_of_baseline_is_one_in_every_scenario() -> None:
    for s in SCENARIOS:
        assert weighted_normalized_sum(BASE, BASE, s) == pytest.approx(1.0)


def test_cost_weights_follow_the_scenario() -> None:
    faster = BASE | {"wct": 50.0}
    smaller = BASE | {"lu": 25.0}
    # performance cares about wct (weight 8), area about LUTs (weight 8)
    assert weighted_normalized_sum(faster, BASE, "performance") < weighted_normalized_sum(smaller, BASE, "performance")
    assert weighted_normalized_sum(smaller, BASE, "area") < weighted_normalized_sum(faster, BASE, "area")
    w = SCENARIOS["area"]
    assert weighted_normalized_sum(smaller, BASE, "area") == pytest.approx(1 - w["lu"] * 0.5 / sum(w.values()))


def test_zero_baseline_resource_is_charged_by_device_fraction() -> None:
    uses_dsp = BASE | {"dsp": 4.0}
    w = SCENARIOS["area"]
    got = weighted_normalized_sum(uses_dsp, BASE, "area", available={"dsp": 8.0})
    assert got == pytest.approx(1 + w["dsp"] * 0.5 / sum(w.values()))
    with pytest.raises(ValueError, match="scenario"):
        weighted_normalized_sum(BASE, BASE, "fastest")


def test_flow_space_dependencies() -> None:
    y, p, fs = flow_space()
    d = fs.default_config()
    assert y.render({k: d[k] for k in y.names}) == [] and p.render({k: d[k] for k in p.names}) == [
        "--placer", "heap", "--router", "router1", "--seed", "1"]
    assert not fs.is_valid(d | {"abc": "abc9", "retime": True})
    assert fs.is_valid(d | {"abc": "abc2", "retime": True})
    assert not fs.is_valid(d | {"router": "router2", "tmg_ripup": True})
    assert not fs.is_valid(d | {"placer": "sa", "heap_alpha": 0.1})
    assert not fs.is_valid(d | {"nodffe": True, "dffe_min_ce_use": 4})
    assert not fs.is_valid(d | {"no_promote_globals": True, "promote_logic": True})
    cfg = d | {"abc": "abc2", "retime": True, "dsp": True, "placer": "sa", "router": "router2", "target_freq": 48}
    assert y.render({k: cfg[k] for k in y.names}) == ["-abc2", "-retime", "-dsp"]
    assert p.render({k: cfg[k] for k in p.names}) == ["--placer", "sa", "--router", "router2", "--seed", "1",
                                                      "--freq", "48"]


@needs_flow
def test_yosys_really_refuses_abc9_with_retime(tmp_path) -> None:
    """The constraint encodes a real refusal, seen as a typed FAILED outcome."""
    from apps.hls_flags.designs import design
    from apps.hls_flags.flow import run_flow

    res = run_flow(design("crc32"), ["-abc9", "-retime"], [], str(tmp_path))
    assert res.failure is not None and res.failure.state == "FAILED"
    assert "retime" in res.failure.reason


@needs_flow
def test_flow_timeout_is_typed(tmp_path) -> None:
    from apps.hls_flags.designs import design
    from apps.hls_flags.flow import run_flow

    res = run_flow(design("crc32"), [], [], str(tmp_path), timeout=0.01)
    assert res.failure is not None and res.failure.state == "TIMEOUT"


@needs_flow
def test_default_flow_metrics_and_cost() -> None:
    from apps.hls_flags.evaluator import HlsEvaluator

    ev = HlsEvaluator("crc32", scenario="performance")
    try:
        res = ev.evaluate(ev.flags.default_config())
        assert res.state == "OK"
        m = res.metrics
        assert m["cost"] == pytest.approx(1.0)
        assert m["fmax_mhz"] > 1 and m["luts"] > 10 and m["ffs"] >= 32 and m["pins"] == 21
        assert m["wct"] == pytest.approx(m["cycles"] / m["fmax_mhz"] * 1e3)
        other = ev.evaluate(ev.flags.default_config() | {"abc": "abc9", "seed": 5})
        assert other.state == "OK" and other.metrics["cost"] > 0
    finally:
        ev.close()


@needs_flow
@pytest.mark.slow
def test_tune_each_scenario_small_budget(tmp_path) -> None:
    from apps.hls_flags.app import HlsFlagsApp
    from ensemble.driver.local import run_app
    from ensemble.registry import create_technique
    from ensemble.settings import RunSettings

    for scenario in SCENARIOS:
        app = HlsFlagsApp(design="crc32", scenario=scenario)
        # the seeded default flow and one more: every scenario's flow runs end to end twice
        settings = RunSettings(test_limit=2, database=f"sqlite:///{tmp_path / (scenario + '.db')}", seed=1,
                               quiet=True)
        result = run_app(app, settings, technique=create_technique("Random", seed=1))
        assert result.best_value <= 1.0 + 1e-9  # the default (cost 1) is seeded
        app.evaluator.close()


def test_legup_space_and_config_writer(tmp_path) -> None:
    from apps.hls_flags.legup import DEFAULT_SPACE_FILE, legup_space, write_config_tcl

    assert DEFAULT_SPACE_FILE.exists()  # shipped with the package, not read from ../shared
    fs, data = legup_space()
    assert len(fs) == 141 == len(data["parameters"])
    assert len(fs.requirements()) == 11
    d = fs.default_config()
    assert fs.is_valid(d)
    # CLOCK_PERIOD depends on SDC_NO_CHAINING: may only leave its default when chaining is off
    assert not fs.is_valid(d | {"CLOCK_PERIOD": 20, "SDC_NO_CHAINING": False})
    assert fs.is_valid(d | {"CLOCK_PERIOD": 20, "SDC_NO_CHAINING": True})
    lines = write_config_tcl(d | {"CLOCK_PERIOD": 20, "SDC_NO_CHAINING": True}, tmp_path / "config.tcl")
    text = (tmp_path / "config.tcl").read_text().splitlines()
    assert text == lines
    assert "set_parameter CLOCK_PERIOD 20" in text and "set_parameter SDC_NO_CHAINING 1" in text
    assert "set_parameter LOCAL_RAMS 1" in text  # fixed lines of the original tuner
    assert not any(line.startswith("set_project") for line in text)


def test_list_designs(capsys) -> None:
    from apps.hls_flags.__main__ import main

    assert main(["--list"]) == 0
    assert {"fir", "stencil", "crc32"} <= {ln.split()[0] for ln in capsys.readouterr().out.splitlines()}


def test_list_designs_from_the_command_line() -> None:
    """``python -m apps.hls_flags --list``: the module entry point, in a fresh interpreter."""
    import subprocess

    from apps.hls_flags.designs import DESIGNS

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-m", "apps.hls_flags", "--list"], cwd=root, capture_output=True,
                          text=True, timeout=120, check=False, env=os.environ | {"PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr
    listed = [ln.split()[0] for ln in proc.stdout.splitlines() if ln.strip()]
    assert listed == list(DESIGNS)
    assert all("cycles)" in ln for ln in proc.stdout.splitlines() if ln.strip())


# -- the LegUp runner, against a MOCK legup ------------------------------------------------------
#
# LegUp 4.0 (with its LLVM, ModelSim and Quartus) cannot be installed on this
# machine or in CI, so these tests put a FAKE `legup` (and, for the LegUp 4.0
# Makefile flow, a fake `make`) on PATH: a small Python script, written below,
# that reads the config.tcl it is given and writes Quartus-format reports
# whose numbers depend on two LegUp parameters.  They check what our runner
# does (work directory, config.tcl, argv, time limits, report parsing, cost),
# not LegUp itself.

MOCK_LEGUP = r'''
"""MOCK LegUp/Quartus for ensemble-tuner's tests (LegUp 4.0 cannot be installed here).

As `legup hw|sim|fpga`, or as `make [v|p|f]` (LegUp 4.0's example Makefile targets).
"""
import os, pathlib, re, sys, time

tool = pathlib.Path(sys.argv[0]).name
arg = sys.argv[1] if len(sys.argv) > 1 else ""
step = {"hw": "hls", "sim": "simulate", "fpga": "fit", "": "hls", "v": "simulate", "p": "project",
        "f": "fit"}.get(arg, arg)
cfg = pathlib.Path("config.tcl").read_text()
with open(os.environ["MOCK_LEGUP_LOG"], "a") as log:
    period_line = next((l for l in cfg.splitlines() if "CLOCK_PERIOD" in l), "")
    log.write(f"{os.getcwd()}|{tool} {arg}|{period_line}\n")
for line in cfg.splitlines():  # what Tcl's `source` would need
    if line.startswith("source ") and not os.path.exists(line.split()[1]):
        sys.exit(f"Error: couldn't read file {line.split()[1]!r}")
if os.environ.get("MOCK_LEGUP_FAIL") == step:
    sys.exit(f"Error: LegUp failed in {step} (mock)")
if os.environ.get("MOCK_LEGUP_SLEEP") == step:
    time.sleep(60)
p = dict(re.findall(r"^set_parameter (\S+) (\S+)$", cfg, re.M))
period = int(p["CLOCK_PERIOD"])
no_chain = p["SDC_NO_CHAINING"] == "1"
if step == "hls":
    pathlib.Path("top.v").write_text("module top(); endmodule\n")
elif step == "simulate":
    if not os.environ.get("MOCK_LEGUP_NO_CYCLES"):
        cycles = int(20000 * 10 / period * (1.25 if no_chain else 1.0))
        print(f"# Cycles: {cycles:10d}")
    print("# ** Note: $finish")
elif step == "fit":
    fmax = 1000.0 / period * (1.3 if no_chain else 1.0)
    luts, regs = 1500 + 40 * period, 2600 - 20 * period
    pathlib.Path("top.sta.rpt").write_text(
        "+----------------------------------+\n; Slow 900mV 85C Model Fmax Summary ;\n"
        f"; Fmax ; Restricted Fmax ; Clock Name ; Note ;\n; {fmax:.2f} MHz ; {fmax:.2f} MHz ; clk ;  ;\n"
        "; Slow 900mV 0C Model Fmax Summary ;\n"
        f"; {fmax * 1.07:.2f} MHz ; {fmax * 1.07:.2f} MHz ; clk ;  ;\n")
    pathlib.Path("top.fit.summary").write_text(
        "Fitter Status : Successful - Tue Jan 10 10:00:00 2017\nFamily : Stratix V\n"
        f"Logic utilization (in ALMs) : {luts:,} / 234,720 ( < 1 % )\nTotal registers : {regs}\n"
        "Total pins : 331 / 1,064 ( 31 % )\nTotal virtual pins : 0\n"
        "Total block memory bits : 12,800 / 52,428,800 ( < 1 % )\nTotal RAM Blocks : 2 / 2,560 ( < 1 % )\n"
        f"Total DSP Blocks : {9 if no_chain else 7} / 256 ( 3 % )\n")
'''


def _mock_metrics(period: int, no_chain: bool) -> dict[str, float]:
    """What MOCK_LEGUP reports, for checking the parsed values and the cost."""
    cycles = int(20000 * 10 / period * (1.25 if no_chain else 1.0))
    fmax = round(1000.0 / period * (1.3 if no_chain else 1.0), 2)
    return {"cycles": cycles, "fmax_mhz": fmax, "wct": cycles / fmax * 1e3, "lu": 1500 + 40 * period,
            "regs": 2600 - 20 * period, "pins": 331, "block": 12800, "ram": 2, "dsp": 9 if no_chain else 7}


@pytest.fixture
def mock_legup(tmp_path, monkeypatch):
    """A LegUp-4.0-like example tree and a MOCK `legup` / `make` on PATH; yields (project dir, log file)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in ("legup", "make"):
        exe = bindir / name
        exe.write_text(f"#!{sys.executable}\n{MOCK_LEGUP}")
        exe.chmod(0o755)
    examples = tmp_path / "legup-4.0" / "examples"
    project = examples / "chstone" / "dfadd"
    project.mkdir(parents=True)
    (examples / "legup.tcl").write_text("# LegUp's Tcl (mock tree)\n")
    (examples / "chstone" / "config.tcl").write_text("# suite config (mock tree)\n")
    (project / "dfadd.c").write_text("int main() { return 0; }\n")
    (project / "Makefile").write_text("NAME=dfadd\nLEVEL = ../..\ninclude $(LEVEL)/Makefile.common\n")
    log = tmp_path / "steps.log"
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.setenv("MOCK_LEGUP_LOG", str(log))
    for var in ("MOCK_LEGUP_FAIL", "MOCK_LEGUP_SLEEP", "MOCK_LEGUP_NO_CYCLES"):
        monkeypatch.delenv(var, raising=False)
    yield project, log


def test_parse_legup_quartus_reports() -> None:
    from apps.hls_flags.legup_flow import (
        parse_cycles,
        parse_fit_summary,
        parse_sta_fmax,
    )

    assert parse_cycles("# Cycles:       12345\n# ** Note: $finish") == 12345
    assert parse_cycles("no count here") is None
    sta = "; Fmax ; Restricted Fmax ;\n; 153.49 MHz ; 153.49 MHz ; clk ;\n; 161.0 MHz ; 161.0 MHz ; clk ;\n"
    assert parse_sta_fmax(sta) == 153.49  # the slowest corner
    with pytest.raises(ValueError, match="Fmax"):
        parse_sta_fmax("; Fmax ; Clock Name ;\n")
    used, avail = parse_fit_summary(
        "Fitter Status : Successful - Tue Jan 10 2017\nLogic utilization (in ALMs) : 1,409 / 234,720 ( < 1 % )\n"
        "Total registers : 2731\nTotal pins : 331 / 1,064 ( 31 % )\nTotal block memory bits : 12,800 / 52,428,800 "
        "( < 1 % )\nTotal RAM Blocks : 2 / 2,560 ( < 1 % )\nTotal DSP Blocks : 7 / 256 ( 3 % )\n")
    assert used == {"lu": 1409, "regs": 2731, "pins": 331, "block": 12800, "ram": 2, "dsp": 7}
    assert avail == {"lu": 234720, "pins": 1064, "block": 52428800, "ram": 2560, "dsp": 256}
    cyclone4 = ("Total logic elements : 5,017 / 114,480 ( 4 % )\nTotal registers : 2100\nTotal pins : 11 / 529 ( 2 % )\n"
                "Total memory bits : 4,096 / 3,981,312 ( < 1 % )\nTotal RAM Blocks : 1 / 432 ( < 1 % )\n"
                "Embedded Multiplier 9-bit elements : 4 / 532 ( < 1 % )\n")
    assert parse_fit_summary(cyclone4)[0]["lu"] == 5017 and parse_fit_summary(cyclone4)[0]["dsp"] == 4
    with pytest.raises(ValueError, match="fitter status"):
        parse_fit_summary("Fitter Status : Failed - Tue Jan 10 2017\n")
    with pytest.raises(ValueError, match="Total DSP Blocks"):
        parse_fit_summary(cyclone4.replace("Embedded Multiplier 9-bit elements", "Other"))


def test_legup_runner_with_mock_legup(mock_legup) -> None:
    """MOCK legup (LegUp cannot be installed here): config.tcl in a fresh work dir, the three
    steps as argv, metrics parsed from the Quartus-format reports, Bruel's cost against the default."""
    from apps.hls_flags.cost import weighted_normalized_sum
    from apps.hls_flags.legup_flow import LegupEvaluator

    project, log = mock_legup
    ev = LegupEvaluator(project, scenario="performance")
    assert ev.runner.flow == "legup"  # `legup` is on PATH
    d = ev.flags.default_config()
    base = ev.evaluate(d)
    assert base.state == "OK" and base.metrics["cost"] == pytest.approx(1.0)
    expected = _mock_metrics(10, False)
    for k, v in expected.items():
        assert base.metrics[k] == pytest.approx(v), k
    lines = log.read_text().splitlines()
    # the baseline ran once (cached): hw, sim, fpga, then the same for evaluate(d)
    assert [ln.split("|")[1] for ln in lines[:3]] == ["legup hw", "legup sim", "legup fpga"]
    work = {ln.split("|")[0] for ln in lines[:3]}
    assert len(work) == 1
    w = Path(work.pop())
    assert w != project and w.parent == project.parent  # a sibling copy of the example ...
    assert not w.exists()                                # ... removed afterwards
    assert lines[0].endswith("set_parameter CLOCK_PERIOD 10")
    # another configuration: the cost is the weighted normalized sum of the parsed metrics
    other = d | {"CLOCK_PERIOD": 20, "SDC_NO_CHAINING": True}
    res = ev.evaluate(other)
    assert res.state == "OK"
    m = _mock_metrics(20, True)
    assert res.metrics["cost"] == pytest.approx(weighted_normalized_sum(m, expected, "performance"))
    assert res.time == pytest.approx(m["cycles"] / (m["fmax_mhz"] * 1e6))
    assert log.read_text().splitlines()[-1].endswith("set_parameter CLOCK_PERIOD 20")
    # dependencies are constraints: CLOCK_PERIOD may only leave its default with SDC_NO_CHAINING
    with pytest.raises(ValueError):
        ev.evaluate(d | {"CLOCK_PERIOD": 20})


def test_legup_runner_failures_and_timeouts_are_typed(mock_legup, monkeypatch) -> None:
    """MOCK legup: a failing step is FAILED with LegUp's message, a hung one TIMEOUT (process group killed)."""
    import time

    from apps.hls_flags.legup_flow import LegupRunner

    project, _log = mock_legup
    runner = LegupRunner(project, flow="legup")
    d = runner.space.default_config()
    monkeypatch.setenv("MOCK_LEGUP_FAIL", "hls")
    res = runner.run(d)
    assert res.failure.state == "FAILED" and "legup hw" in res.failure.reason
    assert "Error: LegUp failed in hls" in res.failure.reason
    monkeypatch.delenv("MOCK_LEGUP_FAIL")
    monkeypatch.setenv("MOCK_LEGUP_SLEEP", "simulate")
    t0 = time.monotonic()
    res = runner.run(d, limit=3.0)
    assert res.failure.state == "TIMEOUT" and "legup sim" in res.failure.reason
    assert time.monotonic() - t0 < 30
    monkeypatch.delenv("MOCK_LEGUP_SLEEP")
    monkeypatch.setenv("MOCK_LEGUP_NO_CYCLES", "1")
    res = runner.run(d)
    assert res.failure.state == "FAILED" and "Cycles" in res.failure.reason
    monkeypatch.delenv("MOCK_LEGUP_NO_CYCLES")
    monkeypatch.setenv("MOCK_LEGUP_FAIL", "fit")
    assert runner.run(d).failure.state == "FAILED"
    assert not [p for p in project.parent.iterdir() if "-tune-" in p.name]  # no work directory left


def test_legup_make_flow_with_mock_make(mock_legup) -> None:
    """MOCK make (LegUp 4.0's example Makefile targets, as the original measure.sh ran them):
    the example's relative `source ../../legup.tcl` still resolves from the work directory."""
    from apps.hls_flags.legup_flow import LegupRunner

    project, log = mock_legup
    runner = LegupRunner(project, flow="make")
    res = runner.run(runner.space.default_config())
    assert res.failure is None, res.failure
    assert res.metrics["cycles"] == 20000 and res.metrics["fmax_mhz"] == 100.0
    steps = [ln.split("|")[1] for ln in log.read_text().splitlines()]
    assert steps == ["make ", "make v", "make p", "make f"]
    assert runner.fixed_lines[:3] == ["source ../../legup.tcl", "source ../config.tcl",
                                      "set_project StratixV DE5-Net Tiger_DDR3"]


def test_tune_legup_space_with_mock(mock_legup, tmp_path, capsys) -> None:
    """MOCK legup: `python -m apps.hls_flags --legup-project DIR` tunes the 141 LegUp parameters and
    its summary prints the cost ratio against LegUp's default configuration."""
    from apps.hls_flags.__main__ import main

    project, _log = mock_legup
    rc = main(["--legup-project", str(project), "--scenario", "performance", "--test-limit", "4",
               "--database", f"sqlite:///{tmp_path / 'legup.db'}", "--technique", "Random", "--seed", "2",
               "--quiet"])
    assert rc == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("default:"))
    assert "(cost)" in line and "tuned" in line and line.rstrip().endswith("x)")
    assert "best / default per metric: fmax_mhz" in out and "cycles" in out
