"""The LegUp 4.0 HLS parameter space of Bruel et al. (ReConFig 2017), as a FlagSpace.

Source: ``data/legup_tuner_space.json`` beside this module, shipped as
package data (a copy of the project's ``shared/data/param_spaces`` file; 141
parameters: ranges, defaults, declared dependencies).  The original tuner
declared the dependencies but did not enforce them; here they are
constraints ("X depends on B": X may leave its default only when B is on).

LegUp reads a Tcl file of ``set_parameter NAME VALUE`` lines;
:func:`write_config_tcl` writes it (booleans as 1/0, after the fixed lines
the original tuner always wrote).  :mod:`apps.hls_flags.legup_flow` runs the
LegUp flow with it and scores the result; that needs a LegUp installation,
which this machine does not have (docs/FLAGS.md says so; the tests use a
mock ``legup``).
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from apps.flags.space import FlagSpace
from apps.flags.spec import Choice, Flag, IntRange

__all__ = ["DEFAULT_SPACE_FILE", "legup_available", "legup_space", "param_name", "write_config_tcl"]

#: shipped with the package: nothing installed reads the checkout's ../shared
DEFAULT_SPACE_FILE = Path(__file__).resolve().parent / "data" / "legup_tuner_space.json"


def _line(prefix: str) -> Callable[[Any], list[str]]:
    """Renderer of one config.tcl line ``<prefix> <value>`` (booleans as 1/0)."""

    def render(value: Any) -> list[str]:
        return [f"{prefix} {int(value) if isinstance(value, bool) else value}"]

    return render


def param_name(legup_name: str) -> str:
    """A parameter name for the search space from a LegUp line prefix."""
    return legup_name.replace("set_parameter ", "").replace(" ", "__")


def legup_space(path: str | Path = DEFAULT_SPACE_FILE) -> tuple[FlagSpace, dict[str, Any]]:
    """(FlagSpace, the raw JSON) of the LegUp parameters; values render as config lines."""
    with open(path) as f:
        data = json.load(f)
    by_name = {p["name"]: p for p in data["parameters"]}
    flags: list[Flag] = []
    for p in data["parameters"]:
        name = param_name(p["name"])
        requires = {}
        for dep in p.get("depends_on", []):
            if by_name.get(dep, {}).get("type") == "bool":
                requires[param_name(dep)] = [True]
        line = p["name"]
        if p["type"] == "bool":
            flags.append(Choice(name, [bool(p["default"]), not p["default"]],
                                _line(line), requires=requires))
        elif p["type"] == "enum":
            vals = [p["default"]] + [v for v in p["values"] if v != p["default"]]
            flags.append(Choice(name, vals, _line(line), requires=requires))
        elif p["type"] == "int":
            lo, hi, d = int(p["min"]), int(p["max"]), int(p["default"])
            lo, hi = min(lo, d), max(hi, d)
            flags.append(IntRange(name, lo, hi, _line(line), default_value=d,
                                  requires=requires, log=lo >= 1 and hi / lo >= 64))
        else:
            raise ValueError(f"{path}: parameter {p['name']!r} has unknown type {p['type']!r}")
    return FlagSpace(flags), data


def write_config_tcl(config: Mapping[str, Any], path: str | Path, space: FlagSpace | None = None,
                     fixed_lines: list[str] | None = None) -> list[str]:
    """Write LegUp's config.tcl for ``config``; returns the lines written."""
    if space is None or fixed_lines is None:
        fs, data = legup_space()
        space = space or fs
        if fixed_lines is None:
            fixed_lines = [ln for ln in data.get("fixed_lines_written_to_config_tcl", [])
                           if not ln.startswith("set_project")]
    lines = list(fixed_lines) + space.render(config)
    Path(path).write_text("\n".join(lines) + "\n")
    return lines


def legup_available(legup: str = "legup") -> bool:
    """Whether a ``legup`` command is on PATH."""
    return shutil.which(legup) is not None
