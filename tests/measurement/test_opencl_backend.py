"""measurement.opencl: device choice, typed build failures and refusals, event timing with raw times."""

from __future__ import annotations

import os

import numpy as np
import pytest

from ensemble.errors import ConfigurationError

pytestmark = pytest.mark.opencl

SRC = """
__kernel void scale(__global float *y, __global const float *x, const float a) {
  int i = get_global_id(0);
  y[i] = a * x[i] * FACTOR;
}
"""


@pytest.fixture(scope="module")
def be():  # type: ignore[no-untyped-def]
    try:
        from measurement.opencl import OpenCLBackend

        b = OpenCLBackend(os.environ.get("ENSEMBLE_TEST_OPENCL_PLATFORM"))
        b.build("__kernel void probe(__global float *a) { a[0] = 1.0f; }")
        return b
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"no usable OpenCL device ({str(exc).splitlines()[0][:120]})")


def _data(be, n=1024):  # type: ignore[no-untyped-def]
    bufs = be.upload({"x": np.arange(n, dtype=np.float32)})
    bufs["y"] = be.empty(4 * n)
    return bufs


def test_device_selection_by_bad_name_names_the_choices() -> None:
    from measurement.opencl import OpenCLBackend, opencl_available

    if not opencl_available():
        pytest.skip("no OpenCL platform")
    with pytest.raises(ConfigurationError, match="platform"):
        OpenCLBackend(platform="no-such-platform-xyz")


def test_defines_timing_and_discard_first(be) -> None:  # type: ignore[no-untyped-def]
    prog = be.build(SRC, defines={"FACTOR": 3})
    bufs = _data(be)
    res = be.run(prog, "scale", global_size=(1024,), local_size=(64,), args=[bufs["y"], bufs["x"], np.float32(2)],
                 warmup=0, repeats=4, discard_first=1, statistic="mean")
    assert res.state == "OK" and len(res.times) == 3
    assert res.time == pytest.approx(sum(res.times) / 3)
    assert res.metrics["wall_median"] > 0
    out = be.download(bufs["y"], np.empty(1024, np.float32))
    assert np.allclose(out, 6 * np.arange(1024))


def test_build_failure_is_typed(be) -> None:  # type: ignore[no-untyped-def]
    from measurement.opencl import OpenCLBuildError

    with pytest.raises(OpenCLBuildError):
        be.build(SRC)  # FACTOR undefined


def test_refused_work_group_sizes_are_failures_not_crashes(be) -> None:  # type: ignore[no-untyped-def]
    prog = be.build(SRC, defines={"FACTOR": 1})
    bufs = _data(be)
    args = [bufs["y"], bufs["x"], np.float32(1)]
    too_big = be.max_work_group_size * 2
    res = be.run(prog, "scale", global_size=(too_big,), local_size=(too_big,), args=args)
    assert res.state == "FAILED" and res.reason.startswith("refused")
    res = be.run(prog, "scale", global_size=(1000,), local_size=(64,), args=args)  # 64 does not divide 1000
    assert res.state == "FAILED" and res.reason.startswith("refused"), res.reason


def test_refused_stencil_work_group_through_the_runner(be) -> None:  # type: ignore[no-untyped-def]
    from apps.stencil.opencl_gen import opencl_baseline
    from apps.stencil.patterns import synthetic
    from apps.stencil.runner import OpenCLStencilRunner

    st = synthetic("star", 3, 1, size=32)
    runner = OpenCLStencilRunner(st, be, repeats=1, warmup=0)
    be_max = be.max_work_group_size
    be.max_work_item_sizes[0], saved = 16, be.max_work_item_sizes[0]  # a device that allows only 16 in x
    try:
        res = runner({**opencl_baseline(), "wgx": 32})
    finally:
        be.max_work_item_sizes[0] = saved
    assert res.state == "FAILED" and res.reason.startswith("refused"), res.reason
    assert be.max_work_group_size == be_max
