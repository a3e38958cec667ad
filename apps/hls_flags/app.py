"""The FPGA flow tuner app: yosys + nextpnr-ice40 options under Bruel's scenarios.

Bruel et al. (ReConFig 2017) tuned LegUp 4.0's HLS parameters with Quartus
behind it; LegUp and Quartus are not available here, so the same method --
a weighted normalized sum of hardware metrics relative to the default
configuration, in four scenarios -- is applied to the open iCE40 flow from
Debian's packages.  The LegUp space itself is in :mod:`apps.hls_flags.legup`;
``--legup-project DIR`` tunes it through :mod:`apps.hls_flags.legup_flow`
where a LegUp installation exists.
"""

from __future__ import annotations

import argparse
from typing import Any

from apps.hls_flags.cost import SCENARIOS
from apps.hls_flags.designs import DESIGNS
from apps.hls_flags.evaluator import HlsEvaluator
from apps.hls_flags.flow import DEVICES
from ensemble.app import TunerApp

__all__ = ["HlsFlagsApp", "list_designs"]


def list_designs() -> str:
    return "\n".join(f"{d.name:8s} {d.description} ({d.cycles} cycles)" for d in DESIGNS.values())


class HlsFlagsApp(TunerApp):
    """Tune synth_ice40 and nextpnr-ice40 options for a bundled Verilog design."""

    #: a flag combination can keep the place-and-route running for minutes; --trial-limit overrides
    default_trial_limit = 120.0

    def __init__(self, args: argparse.Namespace | None = None, **overrides: Any) -> None:
        super().__init__(args)
        opts: dict[str, Any] = {"design": "fir", "scenario": "balanced", "device": "up5k", "icepack": False,
                                "legup_project": None, "legup_flow": None}
        opts.update({k: getattr(self.args, k) for k in opts if getattr(self.args, k, None) is not None})
        opts.update(overrides)
        self.evaluator: Any
        if opts["legup_project"]:
            from apps.hls_flags.legup_flow import LegupEvaluator

            self.evaluator = LegupEvaluator(opts["legup_project"], scenario=opts["scenario"],
                                            flow=opts["legup_flow"])
        else:
            self.evaluator = HlsEvaluator(opts["design"], scenario=opts["scenario"], device=opts["device"],
                                          icepack=bool(opts["icepack"]))

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--design", default="fir", choices=sorted(DESIGNS), help="bundled design (see --list)")
        parser.add_argument("--scenario", default="balanced", choices=sorted(SCENARIOS),
                            help="weights of Bruel et al. (ReConFig 2017)")
        parser.add_argument("--device", default="up5k", choices=sorted(DEVICES), help="iCE40 part")
        parser.add_argument("--icepack", action="store_true", help="also build the bitstream with icepack")
        parser.add_argument("--list", action="store_true", help="list the bundled designs and exit")
        parser.add_argument("--legup-project", default=None, metavar="DIR",
                            help="tune LegUp's HLS parameters for this LegUp example directory instead "
                                 "(needs a LegUp installation; see docs/FLAGS.md)")
        parser.add_argument("--legup-flow", default=None, choices=["legup", "make"],
                            help="with --legup-project: the `legup` command's steps or LegUp 4.0's make "
                                 "targets (default: legup when on PATH, else make)")

    def space(self) -> Any:
        return self.evaluator.flags.to_search_space()

    def objective(self) -> Any:
        from ensemble.objective import Minimize

        return Minimize("cost")

    def seed_configurations(self) -> list[dict[str, Any]]:
        return [self.evaluator.flags.default_config()]

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        return self.evaluator.evaluate(config, limit).to_result()
