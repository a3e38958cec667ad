"""Fixtures shared by the app tests."""

from __future__ import annotations

import pytest

from tests.apps.stencil_cases import ParallelCases


@pytest.fixture(scope="module")
def parallel_cases(request: pytest.FixtureRequest) -> ParallelCases:
    """One ``ParallelCases`` per test module: the cases of its parametrized tests run side by side, once."""
    return ParallelCases(request)


@pytest.fixture(scope="module")
def gpu_backend():  # type: ignore[no-untyped-def]
    """A ``CudaBackend`` on device 0 for the module's GPU tests; skips where PyCUDA or a GPU is missing."""
    try:
        from measurement.cuda import CudaBackend

        return CudaBackend(0)
    except Exception as exc:  # noqa: BLE001 - no PyCUDA or no GPU: skip
        pytest.skip(f"no CUDA GPU usable here ({exc})")
