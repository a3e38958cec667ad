"""The flag apps' closing summary: the tuned best against the tool's own defaults.

Every flag app seeds the tool's default configurations (gcc -O1/-O2/-O3, the
plain ``nvcc -O3`` build, the default FPGA flow), so they are measured in the
same run as everything else.  After tuning, :func:`summarize` reads their
results back from the run's database (``Storage.result_for_hash``) and prints
the ratio of each to the best: the speedup (or cost ratio) over the default
levels, measured under the same conditions as the tuned result.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Callable, Sequence
from typing import Any

__all__ = ["main_with_summary", "summarize"]

log = logging.getLogger("ensemble.apps.flags")


def summarize(app: Any, result: Any, labelled: Sequence[tuple[str, dict[str, Any]]], *, unit: str = "s",
              scale: float = 1.0, out: Any = None) -> list[str]:
    """Lines comparing each labelled default configuration with ``result``'s best."""
    from ensemble.storage import Storage

    out = out or sys.stdout
    if result.best_value is None:
        return []
    storage = Storage(result.database)
    run = storage.get_run(result.run_name)
    if run is None:
        return []
    space = app.space()
    lines = []
    for label, config in labelled:
        row = storage.result_for_hash(run.id, space.config_hash(config))
        if row is None or row.value is None or row.state != "OK":
            lines.append(f"  {label:>8s}: not measured ({row.state if row else 'no result'})")
            continue
        ratio = row.value / result.best_value if result.best_value else float("nan")
        lines.append(f"  {label:>8s}: {row.value * scale:.6g} {unit}  ->  tuned {result.best_value * scale:.6g} {unit}"
                     f"  ({ratio:.3f}x)")
    if lines:
        print("default levels measured in this run vs the tuned best:", file=out)
        for line in lines:
            print(line, file=out)
    render = getattr(app, "render", None)
    if render is not None and result.best_config is not None:
        print("tuned flags: " + (" ".join(render(result.best_config)) or "(none: the tool's defaults)"), file=out)
    return lines


def main_with_summary(app_class: type, argv: list[str],
                      summary: Callable[[Any, Any], None]) -> int:
    """``TunerApp.main`` plus ``summary(app, result)`` printed before the best configuration.

    Falls back to the plain ``main`` if the CLI internals it wraps change.
    """
    from ensemble import cli
    from ensemble.app import app_reference
    from ensemble.driver.local import build_app, run_app

    run_parsed = getattr(cli, "_run_parsed", None)
    if run_parsed is None:
        return int(app_class.main(argv, exit=False))  # type: ignore[attr-defined]

    def run_and_summarize(app: Any, settings: Any, **kw: Any) -> Any:
        result = run_app(app, settings, **kw)
        try:
            summary(app, result)
        except Exception as exc:  # noqa: BLE001 - a summary must never lose the tuning result
            log.warning("could not summarise against the default levels: %s", exc)
        return result

    parser = argparse.ArgumentParser(prog=app_class.__name__,
                                     description=(app_class.__doc__ or "").strip().split("\n")[0] or None)
    cli.add_standard_arguments(parser)
    app_class.add_arguments(parser)  # type: ignore[attr-defined]
    ns = parser.parse_args(argv)
    return int(run_parsed(app_class, ns, argv, lambda: build_app(app_class, argv), app_reference,
                          run_and_summarize))
