"""The yosys (synth_ice40) + nextpnr-ice40 option space.

Every option was run through yosys 0.23 and nextpnr-ice40 0.4 on the bundled
designs (docs/FLAGS.md).  Dependencies found by doing so, encoded as
constraints: ``-retime`` is refused with ``-abc9`` and is meaningless without
ABC (so only with the default ABC flow or ``-abc2``); ``-dffe_min_ce_use``
only acts when DFFE mapping is on; the router-specific timing-driven ripup
flags need their router; heap placer knobs need the heap placer;
``--promote-logic`` contradicts ``--no-promote-globals``.
"""

from __future__ import annotations

from apps.flags.space import FlagSpace
from apps.flags.spec import Choice, IntRange, Switch

__all__ = ["flow_space", "nextpnr_space", "yosys_space"]


def yosys_space(*, dsp: bool = True) -> FlagSpace:
    """``synth_ice40`` options (tokens go into the yosys command)."""
    fs = FlagSpace([
        Choice("abc", ["abc", "abc2", "abc9", "flowmap", "noabc"],
               lambda v: [] if v == "abc" else [f"-{v}"]),
        Switch("retime", on=["-retime"], requires={"abc": ["abc", "abc2"]}),
        Switch("dff", on=["-dff"]),
        Switch("nodffe", on=["-nodffe"]),
        Choice("dffe_min_ce_use", [None, 2, 4, 8], ["-dffe_min_ce_use", "{}"], requires={"nodffe": [False]}),
        Switch("nocarry", on=["-nocarry"]),
        Switch("nobram", on=["-nobram"]),
        Switch("noflatten", on=["-noflatten"]),
    ])
    if dsp:  # only devices with SB_MAC16 (UltraPlus)
        fs.add(Switch("dsp", on=["-dsp"]))
    return fs


def nextpnr_space() -> FlagSpace:
    """nextpnr-ice40 placement and routing options."""
    return FlagSpace([
        Choice("placer", ["heap", "sa"], ["--placer", "{}"]),
        Choice("router", ["router1", "router2"], ["--router", "{}"]),
        IntRange("seed", 1, 64, ["--seed", "{}"], default_value=1),
        Choice("target_freq", [None, 24, 48, 72, 96, 120], ["--freq", "{}"]),
        Switch("opt_timing", on=["--opt-timing"]),
        Switch("no_tmdriv", on=["--no-tmdriv"]),
        Switch("tmg_ripup", on=["--tmg-ripup"], requires={"router": ["router1"]}),
        Switch("router2_tmg_ripup", on=["--router2-tmg-ripup"], requires={"router": ["router2"]}),
        Choice("heap_alpha", [None, 0.05, 0.1, 0.2, 0.3], ["--placer-heap-alpha", "{}"],
               requires={"placer": ["heap"]}),
        Choice("heap_timingweight", [None, 5, 10, 20, 40], ["--placer-heap-timingweight", "{}"],
               requires={"placer": ["heap"]}),
        Switch("promote_logic", on=["--promote-logic"], requires={"no_promote_globals": [False]}),
        Switch("no_promote_globals", on=["--no-promote-globals"]),
    ])


def flow_space(*, dsp: bool = True) -> tuple[FlagSpace, FlagSpace, FlagSpace]:
    """(yosys, nextpnr, combined) flag spaces; the combined one is what is tuned."""
    y, p = yosys_space(dsp=dsp), nextpnr_space()
    return y, p, FlagSpace([*y.flags, *p.flags])
