"""Warm-up then N repeats, keeping every raw time.

The first execution of a kernel or binary pays for page faults, JIT and
cache misses that later ones do not; OpenTuner's gcc/nvcc tuners and Bruel
et al. (CCPE 2017) therefore run a program several times and average the
later runs.  This module does exactly that and nothing more: it returns the
raw per-repeat times so the caller (and the database) keeps them, and
:func:`summarize` reduces them when a single number is needed.

A measured function either returns its own time in seconds (a device
event timer, a time printed by the program) or ``None``, in which case the
wall-clock time of the call is used.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ensemble.errors import ConfigurationError
from ensemble.result import Result

__all__ = ["TimingSummary", "device_timing_result", "reduce_times", "repeat", "summarize"]


def _call(fn: Callable[[], float | None]) -> float:
    t0 = time.perf_counter()
    got = fn()
    wall = time.perf_counter() - t0
    if got is None:
        return wall
    value = float(got)
    if not value >= 0.0:  # catches NaN and negatives
        raise ConfigurationError(f"repeat(fn=...) returned {got!r}; a time must be a number >= 0 or None")
    return value


def repeat(
    fn: Callable[[], float | None],
    *,
    warmup: int = 1,
    repeats: int = 3,
    discard_first: int = 0,
) -> list[float]:
    """Call ``fn`` ``warmup`` times untimed, then ``repeats`` times timed.

    Returns the ``repeats - discard_first`` raw times in call order.
    ``discard_first`` drops the first timed runs from the returned list; it
    exists for the protocol "run 4 times, average the last 3" of the
    OpenTuner flag tuners: ``repeat(fn, warmup=0, repeats=4, discard_first=1)``.
    Exceptions raised by ``fn`` propagate: the caller decides whether they
    mean FAILED.
    """
    if warmup < 0:
        raise ConfigurationError(f"repeat(warmup={warmup!r}) must be >= 0")
    if repeats < 1:
        raise ConfigurationError(f"repeat(repeats={repeats!r}) must be >= 1")
    if not 0 <= discard_first < repeats:
        raise ConfigurationError(
            f"repeat(discard_first={discard_first!r}) must be in [0, repeats) so that at least one time is kept"
        )
    for _ in range(warmup):
        fn()
    times = [_call(fn) for _ in range(repeats)]
    return times[discard_first:]


@dataclass(frozen=True)
class TimingSummary:
    """Reductions of a list of raw times (seconds)."""

    mean: float
    median: float
    minimum: float
    maximum: float
    stdev: float
    n: int


def summarize(times: Sequence[float]) -> TimingSummary:
    """Reduce raw times to mean, median, min, max and sample standard deviation."""
    if not times:
        raise ConfigurationError("summarize(times=...) is empty; measure at least once")
    xs = [float(t) for t in times]
    return TimingSummary(
        mean=statistics.fmean(xs),
        median=statistics.median(xs),
        minimum=min(xs),
        maximum=max(xs),
        stdev=statistics.stdev(xs) if len(xs) > 1 else 0.0,
        n=len(xs),
    )


def reduce_times(times: Sequence[float], statistic: str) -> float:
    """One number from the kept repeat times: median (default), mean (the papers') or min."""
    if statistic == "mean":
        return statistics.fmean(times)
    if statistic == "min":
        return min(times)
    if statistic == "median":
        return statistics.median(times)
    raise ConfigurationError(f"statistic={statistic!r}: use median, mean or min")


def device_timing_result(
    pairs: Sequence[tuple[float, float]],
    *,
    statistic: str,
    metrics: dict[str, float],
    verify: Callable[[], object] | None = None,
) -> Result:
    """The Result of a device-timed kernel from its (event time, wall time) pairs.

    Shared by the OpenCL and CUDA backends so that both report the same
    things the same way: the event times are the raw times, the wall-clock
    median is kept beside the event median as an independent check on the
    device timer, and a failed verification makes the trial INVALID (the
    time is still recorded, since a wrong kernel can be fast).
    ``verify`` returns an object with ``ok``, ``max_abs_error`` and ``detail``
    (measurement.verify.Verdict).
    """
    times = [p[0] for p in pairs]
    metrics["wall_median"] = statistics.median(p[1] for p in pairs)
    metrics["event_median"] = statistics.median(times)
    value = reduce_times(times, statistic)
    if verify is not None:
        v: Any = verify()
        metrics["max_abs_error"] = v.max_abs_error
        if not v.ok:
            return Result(time=value, state="INVALID", reason=f"wrong output: {v.detail}", times=times,
                          metrics=metrics)
    return Result(time=value, times=times, metrics=metrics)
