"""Sampled verification gathers the sampled points on the device, checked once against the whole download.

Runs without a GPU: a stand-in backend keeps "device" buffers as NumPy
arrays and implements ``upload``/``download``/``gather`` the way
``measurement.cuda.CudaBackend`` does (the real one needs PyCUDA and a GPU;
``tests/apps/test_stencil_cuda.py`` runs the real runner there).
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from apps.stencil.cstuner import cstuner_stencil
from apps.stencil.runner import CudaStencilRunner, interior


class _Backend:
    max_shared_memory_optin = 232_448

    def __init__(self, gather: str = "right") -> None:
        self.mode = gather
        self.downloads = 0
        self.gathers = 0

    def upload(self, arrays: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        return {k: np.array(v, copy=True) for k, v in arrays.items()}

    def empty(self, nbytes: int) -> np.ndarray:
        return np.zeros(nbytes, np.uint8)

    def download(self, buf: np.ndarray, out: np.ndarray) -> np.ndarray:
        self.downloads += 1
        out.reshape(-1).view(np.uint8)[:] = buf.reshape(-1).view(np.uint8)
        return out

    def gather(self, buf: np.ndarray, index: np.ndarray, out: np.ndarray) -> np.ndarray:
        self.gathers += 1
        if self.mode == "raises":
            raise RuntimeError("no nvcc")
        out[:] = buf.view(out.dtype).reshape(-1)[index] if self.mode == "right" else 0.0
        return out


def _runner(mode: str) -> tuple[CudaStencilRunner, _Backend]:
    st = cstuner_stencil("hypterm", 16)        # several outputs
    be = _Backend(mode)
    runner = CudaStencilRunner(st, be, sample=500)
    full = st.reference(runner.data)
    for o, _ in st.outputs:                    # what a correct kernel leaves in each output buffer
        padded = np.zeros(st.padded_shape, st.dtype)
        interior(st, padded)[...] = full[o]
        runner.bufs[o] = padded.reshape(-1).view(np.uint8).copy()
    return runner, be


def test_a_gather_that_agrees_is_kept_and_later_checks_download_nothing() -> None:
    runner, be = _runner("right")
    assert runner.gather_verify is None
    assert runner._verify(be, runner.bufs).ok
    assert runner.gather_verify is True and be.downloads == len(runner.st.outputs)   # the one-time cross-check
    assert runner._verify(be, runner.bufs).ok
    assert be.downloads == len(runner.st.outputs)                                     # none since


@pytest.mark.parametrize("mode", ["wrong", "raises"])
def test_a_gather_that_disagrees_or_fails_falls_back_to_the_download_for_good(mode: str) -> None:
    runner, be = _runner(mode)
    assert runner._verify(be, runner.bufs).ok                   # the download's values decide
    assert runner.gather_verify is False
    gathers = be.gathers
    assert runner._verify(be, runner.bufs).ok
    assert be.gathers == gathers                                 # never tried again


def test_a_wrong_value_at_a_sampled_point_is_caught_by_the_gather() -> None:
    runner, be = _runner("right")
    runner._verify(be, runner.bufs)                              # cross-checked, gather in use
    o = runner.st.outputs[0][0]
    st = runner.st
    z, y, x = (int(p[0]) for p in runner.points)                 # type: ignore[index]
    oz, oy, ox = st.origin
    _, py, px = st.padded_shape
    runner.bufs[o].view(st.dtype)[((z + oz) * py + (y + oy)) * px + (x + ox)] += 1.0
    v = runner._verify(be, runner.bufs)
    assert not v.ok and v.detail.startswith(f"{o}:")


def test_without_a_sample_the_whole_output_is_downloaded() -> None:
    st = cstuner_stencil("j3d7pt", 8)
    runner = CudaStencilRunner(st, _Backend("right"))
    assert runner.points is None and runner.gather_verify is False


def test_the_backends_gather_kernel_compiles_and_is_launched_once_per_call() -> None:
    """``CudaBackend.gather`` with nvcc (compile only) and a stand-in driver that plays the kernel."""
    import threading
    import types

    from measurement.cuda import CudaBackend, nvcc_available

    if not nvcc_available():
        pytest.skip("nvcc not on PATH")
    launches: list[Any] = []

    def kernel(src: np.ndarray, idx: np.ndarray, dst: np.ndarray, n: np.int64, grid: Any, block: Any) -> None:
        launches.append((int(n), grid, block))
        dst.view(np.float64)[: int(n)] = src.view(np.float64)[idx]

    modules: list[bytes] = []
    drv = types.SimpleNamespace(
        module_from_buffer=lambda cubin: modules.append(cubin) or types.SimpleNamespace(get_function=lambda n: kernel),
        mem_alloc=lambda nbytes: np.zeros(nbytes, np.uint8),
        memcpy_dtoh=lambda out, buf: out.reshape(-1).view(np.uint8).__setitem__(slice(None), buf[: out.nbytes]))
    be = CudaBackend.__new__(CudaBackend)
    be._drv, be._owner, be.arch = drv, threading.get_ident(), "sm_90"
    src = np.arange(1000, dtype=np.float64)
    idx = np.array([5, 999, 0, 42], np.int64)
    for _ in range(2):
        out = be.gather(src, idx, np.empty(4, np.float64))
        assert list(out) == [5.0, 999.0, 0.0, 42.0]
    assert len(modules) == 1 and modules[0][:4] == b"\x7fELF"     # compiled once, a real cubin
    assert launches == [(4, (1, 1, 1), (256, 1, 1))] * 2
    with pytest.raises(ValueError, match="float32 or float64"):
        be.gather(src, idx, np.empty(4, np.int32))
