"""The gcc flags tuner app: OpenTuner's classic gcc example, done right.

Differences from the original: the flag and ``--param`` list comes from the
installed gcc (``apps.flags.gcc_discovery``) instead of a stale copy; every
build is checked against the -O2 build's output, so a flag combination that
changes the result (``-ffast-math`` on ``kahan``) is INVALID instead of
"fast"; compile failures and time limits are typed results; compiles run in
parallel through ``compile()`` while measurements run in order through
``run_compiled()``.
"""

from __future__ import annotations

import argparse
from typing import Any

from apps.gcc_flags.evaluator import Build, GccEvaluator
from apps.gcc_flags.programs import PROGRAMS
from ensemble.app import TunerApp

__all__ = ["GccFlagsApp", "list_programs"]


def list_programs() -> str:
    return "\n".join(f"{p.name:10s} {p.description}" for p in PROGRAMS.values())


class GccFlagsApp(TunerApp):
    """Tune gcc optimisation flags and params for a bundled C benchmark."""

    def __init__(self, args: argparse.Namespace | None = None, **overrides: Any) -> None:
        super().__init__(args)
        opts: dict[str, Any] = {"program": "matmul", "gcc": "gcc", "size": None, "repeats": 3, "compile_timeout": 120.0}
        opts.update({k: getattr(self.args, k) for k in opts if getattr(self.args, k, None) is not None})
        opts.update(overrides)
        self.evaluator = GccEvaluator(opts["program"], gcc=opts["gcc"], size=opts["size"],
                                      repeats=opts["repeats"], compile_timeout=opts["compile_timeout"])

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--program", default="matmul", choices=sorted(PROGRAMS),
                            help="bundled C benchmark to tune (see --list)")
        parser.add_argument("--gcc", default="gcc", help="compiler to tune (default: gcc on PATH)")
        parser.add_argument("--size", type=int, default=None, help="problem size passed as argv[1]")
        parser.add_argument("--repeats", type=int, default=3,
                            help="timed runs per configuration (the minimum is the value; all are kept)")
        parser.add_argument("--compile-timeout", type=float, default=120.0, help="seconds per compile")
        parser.add_argument("--list", action="store_true", help="list the bundled programs and exit")

    def space(self) -> Any:
        return self.evaluator.flags.to_search_space()

    def seed_configurations(self) -> list[dict[str, Any]]:
        """Plain -O2, -O3 and -O1: the tuner must at least find those."""
        base = self.evaluator.flags.default_config()
        return [base | {"opt_level": lvl} for lvl in ("2", "3", "1")]

    def compile(self, config: dict[str, Any]) -> Build:
        return self.evaluator.compile(config)

    def run_compiled(self, config: dict[str, Any], artifact: Build, limit: float | None) -> Any:
        return self.evaluator.run(artifact, limit).to_result()

    def render(self, config: dict[str, Any]) -> list[str]:
        """The gcc argv tokens of a configuration (for reports)."""
        return self.evaluator.flags.render(config)
