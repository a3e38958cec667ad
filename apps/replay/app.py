"""The replay tuner app: ``python -m apps.replay FILE --technique T --test-limit N``.

Why an app and not a script: a replay must go through the same drivers,
database and report as a real tuning run, so that comparing techniques by
replay compares what users get. Each evaluation returns the recorded value
(or one sampled repeat with ``--noise``) and its recorded cost as
``Result.cost``; ``--stop-after`` is spent on that simulated clock
(:mod:`apps.replay.clock`). See docs/REPLAY.md.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from apps.replay.clock import SimulatedClock
from apps.replay.loaders import load_space
from apps.replay.model import SPACE_MODES, RecordedSpace
from ensemble.app import TunerApp
from ensemble.result import Result

__all__ = ["ReplayApp", "main"]


class ReplayApp(TunerApp):
    """Tune over a recorded space (Kernel Tuner cache, T4 JSON or CSV)."""

    def __init__(self, args: argparse.Namespace | None = None, *, recorded: RecordedSpace | None = None) -> None:
        super().__init__(args)
        a = self.args
        self.recorded = recorded if recorded is not None else load_space(
            a.file, objective=getattr(a, "objective", None), maximize=bool(getattr(a, "maximize", False)),
            cost=getattr(a, "cost_column", None))
        self.mode = self.recorded.check_mode(getattr(a, "space", None))
        self.noise = bool(getattr(a, "noise", False))
        seed = getattr(a, "seed", None)
        self._rng = np.random.default_rng(None if seed is None else seed + 7919)

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        g = parser.add_argument_group("replay")
        g.add_argument("file", help="Kernel Tuner cache JSON(.gz), T4 JSON or CSV table")
        g.add_argument("--space", choices=SPACE_MODES, default=None,
                       help="file: the recorded configurations are the space (default for cache/T4); "
                            "grid: cartesian product of the values, absent ones fail (default for CSV)")
        g.add_argument("--objective", metavar="COLUMN", default=None,
                       help="objective column/key (CSV default: last column; cache default: its objective)")
        g.add_argument("--maximize", action="store_true", help="higher objective values are better")
        g.add_argument("--cost-column", metavar="COLUMN", default=None, help="CSV: seconds charged per evaluation")
        g.add_argument("--noise", action="store_true", help="return one recorded repeat (`times`) instead of the mean")
        g.add_argument("--json-out", metavar="FILE", default=None,
                       help="write best_value, best_config, evaluations and trace as JSON")

    def space(self) -> Any:
        return self.recorded.to_search_space(self.mode)

    def objective(self) -> Any:
        from ensemble.objective import Maximize, Minimize

        name = self.recorded.objective
        return Maximize(name) if self.recorded.maximize else Minimize(name)

    def run(self, config: dict[str, Any], limit: float | None) -> Result:
        rec = self.recorded.evaluate(config, rng=self._rng, noise=self.noise)
        if rec.failed or rec.value is None:
            return Result(state="FAILED", reason=rec.reason, cost=rec.cost)
        name = self.recorded.objective
        return Result(time=rec.value if name == "time" else None, metrics={name: rec.value},
                      times=list(rec.times), cost=rec.cost)


def _split_stop_after(argv: list[str]) -> tuple[list[str], float | None]:
    """Take --stop-after out of the driver's flags: here it is simulated seconds."""
    out, stop = [], None
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--stop-after" and i + 1 < len(argv):
            stop = float(argv[i + 1])
            i += 2
            continue
        if a.startswith("--stop-after="):
            stop = float(a.split("=", 1)[1])
        else:
            out.append(a)
        i += 1
    return out, stop


def main(argv: Sequence[str] | None = None) -> int:
    """Parse the standard flags plus the replay flags and tune; see the module docstring."""
    from ensemble import registry
    from ensemble.cli import add_standard_arguments, print_result, settings_from_args
    from ensemble.driver.local import build_app, run_app
    from ensemble.errors import EnsembleError

    argv = list(sys.argv[1:] if argv is None else argv)
    driver_argv, stop_after = _split_stop_after(argv)
    parser = argparse.ArgumentParser(prog="python -m apps.replay", description=__doc__.split("\n\n")[0])
    add_standard_arguments(parser)
    ReplayApp.add_arguments(parser)
    ns = parser.parse_args(driver_argv)
    ns.stop_after = None
    if ns.list_techniques:
        from ensemble.cli import list_techniques

        print("\n".join(list_techniques()))
        return 0
    try:
        settings = settings_from_args(ns)
        app = build_app(ReplayApp, driver_argv)
        app.args = ns
        name = settings.technique  # a registry name, or "module:attr" as the driver accepts
        if ":" in name and name not in registry.technique_names():
            inner = registry.resolve(name)(seed=settings.seed, **settings.technique_options)
        else:
            inner = registry.create_technique(name, seed=settings.seed, **settings.technique_options)
        clock = SimulatedClock(inner, app.recorded, stop_after=stop_after)
        result = run_app(app, settings, app_ref="apps.replay.app:ReplayApp", app_argv=driver_argv, technique=clock)
    except (EnsembleError, ValueError, OSError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if not ns.quiet:
        print_result(result)
        print(f"simulated time: {clock.elapsed:.3f} s over {clock.evaluations} unique evaluations")
    if ns.json_out:
        Path(ns.json_out).write_text(json.dumps({
            "best_value": result.best_value, "best_config": result.best_config,
            "evaluations": result.evaluations, "trace": clock.trace,
            "simulated_seconds": clock.elapsed, "space_mode": app.mode, "stop_reason": result.stop_reason,
        }, indent=1, default=str))
    return 0



