"""measurement.cuda_hold: timed launches enqueued behind a hold, so that CUDA events time the GPU, not the host.

The protocol is checked against a fake driver that logs every call in order
(PyCUDA and a GPU are not on the development machine; the same protocol on a
real GPU is the ``cuda`` test at the end): the hold kernel goes in first, then
the start event, the launches and the end event, and the host releases the
hold before it waits for the end event (otherwise it would wait for ever).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import measurement.cuda as cuda_mod
from measurement.cuda import CudaBackend, CudaBuild, nvcc_available


class _HostAllocation:
    def get_device_pointer(self) -> int:
        return 0x7000


class _Pinned(np.ndarray):
    """A page-locked array stand-in: its ``.base`` answers ``get_device_pointer`` as PyCUDA's does."""

    @property
    def base(self) -> Any:  # type: ignore[override]
        return _HostAllocation()


class _FakeDriver:
    """Just enough of pycuda.driver for ``CudaBackend.run`` and ``copy_bandwidth``, logging calls in order."""

    class Error(Exception):
        pass

    class function_attribute:  # PyCUDA's names
        MAX_THREADS_PER_BLOCK = "max_threads"
        MAX_DYNAMIC_SHARED_SIZE_BYTES = "max_dyn_smem"

    class host_alloc_flags:
        DEVICEMAP = 2

    def __init__(self) -> None:
        self.log: list[str] = []
        self.flags: Any = None
        self.armed: int | None = None  # the slot of the last hold enqueued
        self.give_up = False  # the next hold ends by its timeout (its flag[1] is set)
        self.fail_launch = False
        drv = self

        class Event:
            def record(self) -> None:
                drv.log.append("record")

            def synchronize(self) -> None:
                assert drv.armed is None or drv.flags[drv.armed, 0] == 1, \
                    "waited for the end event with the hold still armed: a real GPU would never get there"
                drv.log.append("sync")

            def time_since(self, other: Any) -> float:
                return 1.0

        class Context:
            @staticmethod
            def synchronize() -> None:
                drv.log.append("ctx-sync")

        self.Event = Event
        self.Context = Context

    def pagelocked_zeros(self, shape: tuple[int, ...], dtype: Any, mem_flags: int = 0) -> np.ndarray:
        assert mem_flags == self.host_alloc_flags.DEVICEMAP
        self.flags = np.zeros(shape, dtype).view(_Pinned)
        return self.flags

    def mem_alloc(self, n: int) -> Any:
        class _Buf:
            def free(self) -> None:
                pass
        return _Buf()

    def memset_d8(self, *a: Any) -> None:
        pass

    def memcpy_dtod(self, *a: Any) -> None:
        self.log.append("copy")

    def memcpy_dtod_async(self, *a: Any) -> None:
        self.log.append("copy-async")


class _Fn:
    def __init__(self, drv: _FakeDriver, name: str) -> None:
        self.drv, self.name = drv, name

    def __call__(self, *args: Any, grid: Any, block: Any, shared: int = 0) -> None:
        drv = self.drv
        if self.name == "ens_stream_hold":
            slot = (int(args[0]) - 0x7000) // drv.flags.strides[0]
            drv.log.append(f"hold{slot}")
            drv.armed = slot
            if drv.give_up:
                drv.flags[slot, 1] = 1
                drv.give_up = False
            return
        if drv.fail_launch:
            raise drv.Error("unspecified launch failure")
        drv.log.append(f"launch:{self.name}")

    def get_attribute(self, what: str) -> int:
        return 1024

    def set_attribute(self, what: str, n: int) -> None:
        pass


def _backend(monkeypatch: pytest.MonkeyPatch, hold: bool) -> tuple[CudaBackend, _FakeDriver]:
    drv = _FakeDriver()
    be = object.__new__(CudaBackend)  # no PyCUDA here: the constructor's device set-up is skipped
    be._drv, be.name, be.arch, be.hold, be._hold = drv, "fake GPU", "sm_90", hold, None

    class _Mod:
        def get_function(self, name: str) -> _Fn:
            return _Fn(drv, name)

    monkeypatch.setattr(CudaBackend, "load", lambda self, build, name: (_Mod(), _Fn(drv, name)))
    monkeypatch.setattr(cuda_mod, "compile_cuda", lambda src, arch="sm_90", **kw: CudaBuild(b"", arch))
    return be, drv


def _run(be: CudaBackend, **kw: Any) -> Any:
    return be.run(CudaBuild(b"", "sm_90"), ["k1", "k2"], grid=(1, 1, 1), block=(32, 1, 1), args=[], **kw)


def test_timed_launches_are_enqueued_behind_the_hold_and_released_before_the_wait(monkeypatch) -> None:
    be, drv = _backend(monkeypatch, hold=True)
    res = _run(be, warmup=2, repeats=3)
    assert res.state == "OK" and res.metrics["hold_timeouts"] == 0
    warm = ["record", "launch:k1", "launch:k2", "record", "sync", "ctx-sync"]
    timed = [[f"hold{i}", "record", "launch:k1", "launch:k2", "record", "sync", "ctx-sync"] for i in range(3)]
    # warm-up launches go without the hold (a first launch may wait for the device to go idle)
    assert drv.log == warm + warm + timed[0] + timed[1] + timed[2]
    assert (drv.flags[:3, 0] == 1).all() and (drv.flags[3:, 0] == 0).all()


def test_without_hold_the_protocol_is_unchanged(monkeypatch) -> None:
    be, drv = _backend(monkeypatch, hold=False)
    res = _run(be, warmup=1, repeats=2)
    assert res.state == "OK" and "hold_timeouts" not in res.metrics
    assert drv.flags is None and not any(e.startswith("hold") for e in drv.log)
    be.copy_bandwidth(1 << 20, repeats=1)
    assert "copy" in drv.log and "copy-async" not in drv.log


def test_a_hold_that_timed_out_is_counted(monkeypatch) -> None:
    be, drv = _backend(monkeypatch, hold=True)
    _run(be, warmup=0, repeats=1)
    drv.give_up = True
    res = _run(be, warmup=0, repeats=2)
    assert res.metrics["hold_timeouts"] == 1 and be._hold.timeouts == 1


def test_a_failed_launch_still_releases_the_hold_and_the_next_measurement_runs(monkeypatch) -> None:
    be, drv = _backend(monkeypatch, hold=True)
    drv.fail_launch = True
    res = _run(be, warmup=0, repeats=1)
    assert res.state == "FAILED" and res.reason.startswith("launch")
    assert drv.flags[0, 0] == 1
    drv.fail_launch = False
    ok = _run(be, warmup=0, repeats=1)
    assert ok.state == "OK"  # on a fresh slot, not the one the failure left behind:
    assert drv.log[-7:] == ["hold1", "record", "launch:k1", "launch:k2", "record", "sync", "ctx-sync"]


def test_the_copy_is_held_and_asynchronous(monkeypatch) -> None:
    be, drv = _backend(monkeypatch, hold=True)
    be.copy_bandwidth(1 << 20, repeats=1)
    assert drv.log[:4] == ["hold0", "record", "copy-async", "record"] and "copy" not in drv.log


def test_bad_timeout_names_the_argument() -> None:
    from measurement.cuda_hold import StreamHold

    with pytest.raises(ValueError, match="timeout"):
        StreamHold(object(), timeout=0)


@pytest.mark.cuda
@pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")
def test_held_launches_on_a_gpu_compute_the_same_and_never_time_out() -> None:
    try:
        be = CudaBackend(0, hold=True)
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no CUDA GPU usable here ({exc})")
    src = r'''extern "C" __global__ void axpy(float *y, const float *x, float a, int n) {
      int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) y[i] += a * x[i]; }'''
    b = cuda_mod.compile_cuda(src, arch=be.arch)
    n = 1 << 20
    bufs = be.upload({"y": np.zeros(n, np.float32), "x": np.ones(n, np.float32)})
    res = be.run(b, "axpy", grid=(n // 256, 1, 1), block=(256, 1, 1),
                 args=[bufs["y"], bufs["x"], np.float32(2), np.int32(n)], warmup=1, repeats=5)
    assert res.state == "OK" and res.metrics["hold_timeouts"] == 0 and all(t > 0 for t in res.times)
    assert np.all(be.download(bufs["y"], np.empty(n, np.float32)) == 12.0)  # six launches of y += 2
    assert be.copy_bandwidth(1 << 24, repeats=3) > 1e9 and be._hold.timeouts == 0
