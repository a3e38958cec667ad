"""FPGA flow tuner: Bruel's cost, option dependencies, the yosys/nextpnr flow, LegUp space."""

from __future__ import annotations

import shutil

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
        settings = RunSettings(test_limit=4, database=f"sqlite:///{tmp_path / (scenario + '.db')}", seed=1,
                               quiet=True)
        result = run_app(app, settings, technique=create_technique("Random", seed=1))
        assert result.best_value <= 1.0 + 1e-9  # the default (cost 1) is seeded
        app.evaluator.close()


def test_legup_space_and_config_writer(tmp_path) -> None:
    from apps.hls_flags.legup import DEFAULT_SPACE_FILE, legup_space, write_config_tcl

    if not DEFAULT_SPACE_FILE.exists():
        pytest.skip("shared data not present")
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
