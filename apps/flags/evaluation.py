"""What a flag-tuner app learns from one build-and-run, before it becomes a Result.

The compile/run/verify logic of the toolchain apps is kept independent of the
drivers so it can be tested (and reused by scripts) without a tuning run;
:meth:`Evaluation.to_result` converts to ``ensemble.Result`` at the edge.

Also here: the "key value" output format of the bundled programs and the
comparison that turns a miscompile into INVALID.
"""

from __future__ import annotations

import math
import shutil
import tempfile
import weakref
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Evaluation", "compare_outputs", "parse_key_values"]


@dataclass
class Evaluation:
    """Outcome of one configuration: state OK/FAILED/TIMEOUT/INVALID, times, metrics."""

    state: str
    time: float | None = None
    times: list[float] = field(default_factory=list)
    metrics: dict[str, float] = field(default_factory=dict)
    reason: str | None = None

    @property
    def ok(self) -> bool:
        return self.state == "OK"

    def to_result(self) -> Any:
        """The ``ensemble.Result`` for the drivers."""
        from ensemble.result import Result

        return Result(time=self.time if self.ok else None, state=self.state, reason=self.reason,
                      metrics=dict(self.metrics), times=list(self.times))


def parse_key_values(text: str) -> dict[str, str]:
    """``key value`` lines (first token, rest of the line); other lines ignored."""
    out: dict[str, str] = {}
    for line in text.splitlines():
        parts = line.strip().split(None, 1)
        if len(parts) == 2 and parts[0].replace("_", "").isalnum():
            out[parts[0]] = parts[1].strip()
    return out


def _number(s: str) -> float | None:
    try:
        return float(s)
    except ValueError:
        return None


def compare_outputs(reference: Mapping[str, str], got: Mapping[str, str], *, rtol: float,
                    atol: float = 0.0, ignore: tuple[str, ...] = ("time_s",)) -> str | None:
    """None when ``got`` matches ``reference``, else the reason (first mismatch).

    Integers and non-numeric values must match exactly; floats within
    ``|a - b| <= atol + rtol * |ref|``.  NaN only matches NaN.
    """
    for key, ref in reference.items():
        if key in ignore:
            continue
        if key not in got:
            return f"output {key!r} missing (reference {ref})"
        val = got[key]
        if val == ref:
            continue
        r, v = _number(ref), _number(val)
        exact = r is None or v is None or ("." not in ref and "e" not in ref.lower() and "nan" not in ref.lower())
        if exact or r is None or v is None:
            return f"output {key!r} = {val} differs from reference {ref}"
        if math.isnan(r) or math.isnan(v) or abs(v - r) > atol + rtol * abs(r):
            return f"output {key!r} = {val} differs from reference {ref} (rtol {rtol:g})"
    return None


def owned_workdir(owner: object, workdir: str | None, prefix: str) -> str:
    """The evaluator's build directory: ``workdir`` if given, else a fresh temporary one.

    Why: every evaluator compiles into a directory of its own; one we created
    is removed when the evaluator is garbage-collected or the process exits,
    so CLI runs leave nothing behind in /tmp, while a directory the caller
    passed in is the caller's and is kept.
    """
    if workdir is not None:
        return workdir
    path = tempfile.mkdtemp(prefix=prefix)
    weakref.finalize(owner, shutil.rmtree, path, True)
    return path
