"""The flags builder: rendering, dependencies, search-space bridge, gcc discovery."""

from __future__ import annotations

import shutil

import numpy as np
import pytest

from apps.flags import Choice, FlagSpace, IntRange, PowerOfTwoRange, Switch
from apps.flags.gcc_discovery import parse_optimizers, parse_params


def _space() -> FlagSpace:
    return FlagSpace([
        Switch("unroll", on=["-funroll-loops"], off=["-fno-unroll-loops"], tristate=True),
        Switch("rdc", on=["--relocatable-device-code=true"]),
        Switch("dlto", on=["-dlto"], requires={"rdc": [True]}),
        Choice("opt", [None, 0, 1, 2, 3], ["-Xptxas", "-O{}"]),
        IntRange("regs", 16, 255, ["--maxrregcount={}"], default_value=255),
        PowerOfTwoRange("block", 32, 1024, ["-DBLOCK={}"], default_value=256),
        IntRange("unroll_times", 0, 32, ["--param=max-unroll-times={}"], default_value=8, omit_default=True),
    ])


def test_render_is_argv_list_one_token_per_item() -> None:
    fs = _space()
    cfg = {"unroll": "off", "rdc": True, "dlto": True, "opt": 2, "regs": 64, "block": 128, "unroll_times": 4}
    argv = fs.render(cfg)
    assert argv == ["-fno-unroll-loops", "--relocatable-device-code=true", "-dlto", "-Xptxas", "-O2",
                    "--maxrregcount=64", "-DBLOCK=128", "--param=max-unroll-times=4"]
    assert all(isinstance(t, str) and " " not in t for t in argv)


def test_default_config_renders_tool_defaults_only() -> None:
    fs = _space()
    assert fs.render(fs.default_config()) == ["--maxrregcount=255", "-DBLOCK=256"]


def test_dependency_respected_and_reported() -> None:
    fs = _space()
    cfg = fs.default_config() | {"dlto": True, "rdc": False}
    assert not fs.is_valid(cfg)
    assert any("dlto" in v and "rdc" in v for v in fs.violations(cfg))
    with pytest.raises(ValueError, match="dlto"):
        fs.render(cfg)
    assert fs.is_valid(cfg | {"rdc": True})


def test_illegal_values_refused() -> None:
    fs = _space()
    for bad in ({"regs": 300}, {"block": 100}, {"opt": 5}, {"unroll": True}):
        assert not fs.is_valid(fs.default_config() | bad)
    assert not fs.is_valid({**fs.default_config(), "nonsense": 1})


def test_requirement_on_unknown_flag_refused() -> None:
    fs = FlagSpace([Switch("a", on=["-a"], requires={"b": [True]})])
    with pytest.raises(ValueError, match="'b'"):
        fs.requirements()


def test_duplicate_name_refused() -> None:
    with pytest.raises(ValueError, match="duplicate"):
        FlagSpace([Switch("a", on=["-a"]), Switch("a", on=["-b"])])


def test_search_space_encodes_dependencies_as_constraints() -> None:
    fs = _space()
    space = fs.to_search_space()
    assert set(space.names) == set(fs.names)
    rng = np.random.default_rng(1)
    samples = space.sample(rng, n=300)
    assert any(c["dlto"] for c in samples)
    for c in samples:
        assert fs.is_valid(c), fs.violations(c)
        assert not c["dlto"] or c["rdc"]
    assert not space.is_valid(fs.default_config() | {"dlto": True, "rdc": False})


_OPT_TEXT = """The following options control optimizations:
  -O<number>                  \t\t
  -faggressive-loop-optimizations \t[enabled]
  -falign-functions=          \t\t16
  -fassociative-math          \t\t[disabled]
  -fexceptions                \t\t[available in Modula-2]
  -ffast-math                 \t\t
  -ffp-contract=[off|on|fast] \t\tfast
  -flifetime-dse=<0,2>        \t\t2
  -fhandle-exceptions         \t\t-fexceptions
  -fstack-protector           \t\t[disabled]
"""

_PARAM_TEXT = """The following options control parameters:
  --param=align-threshold=<1,65536> \t\t100
  --param=asan-globals=<0,1>  \t\t1
  --param=max-unroll-times=   \t\t8
  --param=early-inlining-insns= \t6
  --param=evrp-mode=          \t\tranger
  --param=vect-max-peeling-for-alignment=<0,64> \t-1
  --param=case-values-threshold= \t0
"""


def test_parse_optimizers() -> None:
    flags = {f.name: f for f in parse_optimizers(_OPT_TEXT)}
    assert set(flags) == {"faggressive_loop_optimizations", "fassociative_math", "ffast_math",
                          "ffp_contract_choice", "flifetime_dse_value"}
    assert flags["ffast_math"].render("on") == ["-ffast-math"]
    assert flags["ffast_math"].render("off") == ["-fno-fast-math"]
    assert flags["ffast_math"].render("default") == []
    assert flags["ffp_contract_choice"].values() == [None, "off", "on", "fast"]
    assert flags["ffp_contract_choice"].render("off") == ["-ffp-contract=off"]
    assert flags["flifetime_dse_value"].render(2) == []
    assert flags["flifetime_dse_value"].render(1) == ["-flifetime-dse=1"]


def test_parse_params_ranges_and_defaults() -> None:
    flags = {f.name: f for f in parse_params(_PARAM_TEXT)}
    assert set(flags) == {"param_align_threshold", "param_max_unroll_times", "param_early_inlining_insns",
                          "param_vect_max_peeling_for_alignment"}
    at = flags["param_align_threshold"]
    assert (at.low, at.high, at.default, at.log) == (1, 65536, 100, True)
    assert at.render(100) == [] and at.render(7) == ["--param=align-threshold=7"]
    mu = flags["param_max_unroll_times"]
    assert (mu.low, mu.high, mu.default) == (0, 32, 8)
    vp = flags["param_vect_max_peeling_for_alignment"]
    assert vp.default == -1 and vp.render(-1) == []  # "unset" default kept, never rendered


@pytest.mark.skipif(shutil.which("gcc") is None, reason="gcc not installed")
def test_discover_installed_gcc() -> None:
    from apps.flags.gcc_discovery import discover_gcc

    fs = discover_gcc("gcc", "-O2")
    assert "funroll_loops" in fs and "param_max_unroll_times" in fs
    assert fs.render(fs.default_config()) == []
    assert fs.render(fs.default_config() | {"funroll_loops": "on"}) == ["-funroll-loops"]
