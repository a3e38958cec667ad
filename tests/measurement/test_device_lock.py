"""The device lock makes measurements of several processes take turns, and says how long each waited."""

from __future__ import annotations

import itertools
import multiprocessing
import time
from pathlib import Path

import pytest

from measurement.device_lock import DeviceLock


def _hold(path: str, times: int, hold_s: float, out: multiprocessing.Queue[tuple[float, float]]) -> None:
    lock = DeviceLock(path)
    for _ in range(times):
        with lock.held():
            t0 = time.monotonic()
            time.sleep(hold_s)
            out.put((t0, time.monotonic()))


def test_processes_holding_the_lock_never_overlap(tmp_path: Path) -> None:
    ctx = multiprocessing.get_context("spawn")
    out: multiprocessing.Queue[tuple[float, float]] = ctx.Queue()
    procs = [ctx.Process(target=_hold, args=(str(tmp_path / "gpu.lock"), 4, 0.03, out)) for _ in range(3)]
    for p in procs:
        p.start()
    spans = sorted(out.get(timeout=60) for _ in range(12))
    for p in procs:
        p.join(30)
        assert p.exitcode == 0
    for (_, end), (start, _) in itertools.pairwise(spans):
        assert start >= end          # each hold begins after the previous one ended


def test_a_second_holder_waits_and_is_told_how_long(tmp_path: Path) -> None:
    import threading

    lock = DeviceLock(tmp_path / "gpu.lock")
    entered = threading.Event()
    waited: list[float] = []

    def first() -> None:
        with lock.held():
            entered.set()
            time.sleep(0.2)

    th = threading.Thread(target=first)
    th.start()
    entered.wait(10)
    with lock.held() as w:       # two threads of one process exclude each other too
        waited.append(w)
    th.join()
    assert waited[0] >= 0.1


def test_a_lock_in_a_missing_directory_names_the_fix(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="directory does not exist"):
        DeviceLock(tmp_path / "no" / "such" / "gpu.lock")


def test_the_stencil_app_names_the_flag_for_a_lock_in_a_missing_directory(tmp_path: Path) -> None:
    from apps.stencil.app import StencilApp
    from ensemble.errors import ConfigurationError

    with pytest.raises(ConfigurationError, match="--device-lock .*existing directory"):
        StencilApp(pattern="star", dims=2, radius=1, backend="opencl", size=16,
                   device_lock=str(tmp_path / "no" / "gpu.lock"))
