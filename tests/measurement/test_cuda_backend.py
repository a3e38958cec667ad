"""measurement.cuda: typed build failures, ptxas metrics, refused launches, event timing."""

from __future__ import annotations

import numpy as np
import pytest

from ensemble.errors import EnsembleError
from measurement.cuda import CudaBuildError, compile_cuda, nvcc_available, parse_ptxas

pytestmark = pytest.mark.cuda
needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")

AXPY = r'''
extern "C" __global__ void __launch_bounds__(BLOCK) axpy(float *y, const float *x, float a, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += a * x[i];
}
'''


def test_parse_ptxas_reads_registers_and_spills() -> None:
    log = ("ptxas info    : Used 40 registers, used 1 barriers, 2720 bytes smem\n"
           "    8 bytes stack frame, 12 bytes spill stores, 16 bytes spill loads\n")
    assert parse_ptxas(log) == {"registers": 40, "spill_stores": 12, "spill_loads": 16, "smem_bytes": 2720}


@needs_nvcc
def test_compile_with_defines_reports_ptxas_metrics() -> None:
    b = compile_cuda(AXPY, defines={"BLOCK": 128})
    assert b.cubin.startswith(b"\x7fELF") and b.registers and b.registers > 0
    assert b.metrics()["spill_stores"] == 0


@needs_nvcc
def test_build_failure_is_a_typed_error_with_the_log() -> None:
    with pytest.raises(CudaBuildError) as info:
        compile_cuda(AXPY.replace("int n)", "int n"), defines={"BLOCK": 128})
    assert isinstance(info.value, EnsembleError)
    assert "error" in info.value.log


def _backend():  # type: ignore[no-untyped-def]
    try:
        from measurement.cuda import CudaBackend

        return CudaBackend(0)
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no CUDA GPU usable here ({exc})")


@needs_nvcc
def test_refused_launches_are_failures_not_crashes() -> None:
    be = _backend()
    b = compile_cuda(AXPY, defines={"BLOCK": 64}, arch=be.arch)
    n = 1 << 12
    bufs = be.upload({"y": np.zeros(n, np.float32), "x": np.ones(n, np.float32)})
    args = [bufs["y"], bufs["x"], np.float32(2), np.int32(n)]
    res = be.run(b, "axpy", grid=(n // 128, 1, 1), block=(128, 1, 1), args=args)  # > launch bound
    assert res.state == "FAILED" and res.reason.startswith("refused")
    res = be.run(b, "axpy", grid=(1, 1, 1), block=(2048, 1, 1), args=args)
    assert res.state == "FAILED" and res.reason.startswith("refused")
    ok = be.run(b, "axpy", grid=(n // 64, 1, 1), block=(64, 1, 1), args=args, warmup=0, repeats=4, discard_first=1)
    assert ok.state == "OK" and len(ok.times) == 3 and all(t > 0 for t in ok.times)
    assert ok.metrics["wall_median"] >= ok.metrics["event_median"] * 0.5
    out = be.download(bufs["y"], np.empty(n, np.float32))
    assert np.all(out == 8.0)  # four launches of y += 2 * 1


@needs_nvcc
def test_copy_bandwidth_is_positive() -> None:
    be = _backend()
    assert be.copy_bandwidth(1 << 24, repeats=3) > 1e9
