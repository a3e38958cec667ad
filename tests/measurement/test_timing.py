"""Behaviour of measurement.timing."""

from __future__ import annotations

import math

import pytest

from measurement.timing import repeat, summarize


class _Counter:
    """Returns 10, 1, 2, 3, ... as its 'own' time and counts calls."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> float:
        self.calls += 1
        return 10.0 if self.calls == 1 else float(self.calls - 1)


def test_warmup_not_returned_raw_times_kept() -> None:
    fn = _Counter()
    times = repeat(fn, warmup=1, repeats=3)
    assert fn.calls == 4
    assert times == [1.0, 2.0, 3.0]


def test_run_four_average_last_three() -> None:
    fn = _Counter()
    times = repeat(fn, warmup=0, repeats=4, discard_first=1)
    assert fn.calls == 4
    assert times == [1.0, 2.0, 3.0]  # the slow first run (10) is dropped
    assert summarize(times).mean == pytest.approx(2.0)


def test_none_means_wall_clock() -> None:
    times = repeat(lambda: None, warmup=0, repeats=2)
    assert len(times) == 2 and all(t >= 0.0 for t in times)


@pytest.mark.parametrize("kwargs", [{"repeats": 0}, {"warmup": -1}, {"repeats": 2, "discard_first": 2}])
def test_bad_arguments_named(kwargs: dict) -> None:
    with pytest.raises(ValueError, match=next(iter(kwargs)) if "discard_first" not in kwargs else "discard_first"):
        repeat(lambda: 1.0, **kwargs)


def test_nan_time_refused() -> None:
    with pytest.raises(ValueError, match="fn"):
        repeat(lambda: math.nan, warmup=0, repeats=1)


def test_exception_propagates() -> None:
    def boom() -> float:
        raise RuntimeError("launch failed")

    with pytest.raises(RuntimeError, match="launch failed"):
        repeat(boom)


def test_summarize() -> None:
    s = summarize([3.0, 1.0, 2.0])
    assert (s.mean, s.median, s.minimum, s.maximum, s.n) == (2.0, 2.0, 1.0, 3.0, 3)
    assert s.stdev == pytest.approx(1.0)
    with pytest.raises(ValueError, match="times"):
        summarize([])
