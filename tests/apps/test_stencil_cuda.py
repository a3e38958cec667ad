"""csTuner CUDA kernels: every optimisation compiles with nvcc here; on a GPU every one matches NumPy."""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor

import pytest

from apps.stencil.cstuner import CSTUNER_STENCILS, cstuner_stencil
from apps.stencil.cuda_gen import generate_cuda
from measurement.cuda import compile_cuda, nvcc_available
from tests.apps.stencil_cases import (
    CUDA_OPTS,
    ParallelCases,
    cuda_case_applies,
    cuda_config,
)

pytestmark = pytest.mark.cuda
needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")


def _gpu_backend():  # type: ignore[no-untyped-def]
    try:
        from measurement.cuda import CudaBackend

        return CudaBackend(0)
    except Exception as exc:  # noqa: BLE001 - no PyCUDA or no GPU: skip
        pytest.skip(f"no CUDA GPU usable here ({exc})")


@functools.cache
def _cases(all_stencils: bool) -> list[tuple[str, str]]:
    names = CSTUNER_STENCILS if all_stencils else ("j3d7pt",)
    out = []
    for n in names:
        st = cstuner_stencil(n, 32)
        out += [(n, o) for o in CUDA_OPTS if cuda_case_applies(o, st)]
    return out


def _compiles(name: str, opt: str) -> None:
    build = compile_cuda(generate_cuda(cstuner_stencil(name, 32), cuda_config(opt)).source, arch="sm_90")
    assert build.cubin[:4] == b"\x7fELF", (name, opt)
    assert build.registers is not None and build.registers > 0, (name, opt)


@needs_nvcc
@pytest.mark.parametrize("opt", [o for _, o in _cases(False)])
def test_every_optimisation_compiles_for_j3d7pt(opt: str, parallel_cases: ParallelCases) -> None:
    parallel_cases.run("test_every_optimisation_compiles_for_j3d7pt", lambda opt: _compiles("j3d7pt", opt), opt=opt)


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name,opt", _cases(True))
def test_every_stencil_and_optimisation_compiles(name: str, opt: str, parallel_cases: ParallelCases) -> None:
    parallel_cases.run("test_every_stencil_and_optimisation_compiles", _compiles, name=name, opt=opt)


@pytest.fixture(scope="module")
def gpu_builds():  # type: ignore[no-untyped-def]
    """Runners and kernels of every case, compiled in parallel (nvcc dominates the time)."""

    from apps.stencil.runner import CudaStencilRunner

    backend = _gpu_backend()
    runners = {n: CudaStencilRunner(cstuner_stencil(n, 32), backend, repeats=1, warmup=0) for n in CSTUNER_STENCILS}
    cases = _cases(True)
    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        builds = list(pool.map(lambda c: runners[c[0]].build(cuda_config(c[1])), cases))
    return runners, dict(zip(cases, builds))


@pytest.mark.parametrize("name,opt", _cases(True))
def test_every_stencil_and_optimisation_matches_numpy_on_the_gpu(name: str, opt: str, gpu_builds) -> None:  # type: ignore[no-untyped-def]
    runners, builds = gpu_builds
    res = runners[name].measure(builds[(name, opt)])
    assert res.state == "OK", res.reason
    assert res.metrics["max_abs_error"] <= 1e-9 * max(1.0, runners[name].ref[runners[name].st.outputs[0][0]].max())


def test_wrong_output_is_invalid_on_the_gpu() -> None:
    from apps.stencil.runner import CudaStencilRunner

    backend = _gpu_backend()
    st = cstuner_stencil("j3d7pt", 32)
    runner = CudaStencilRunner(st, backend, repeats=1, warmup=0)
    runner.ref["out"] = runner.ref["out"] + 1.0  # the kernel is right, the expectation is not
    res = runner(cuda_config("baseline"))
    assert res.state == "INVALID" and "wrong output" in (res.reason or "")


@pytest.mark.parametrize("name", ["j3d7pt", "hypterm"])
def test_sampled_verification_gathers_on_the_gpu_and_agrees_with_the_download(name: str) -> None:
    """With a sample, the first check cross-checks the device gather against the download and keeps it."""
    from apps.stencil.runner import CudaStencilRunner

    backend = _gpu_backend()
    runner = CudaStencilRunner(cstuner_stencil(name, 32), backend, repeats=1, warmup=0, sample=2000)
    assert runner.gather_verify is None
    assert runner(cuda_config("baseline")).state == "OK"
    assert runner.gather_verify is True                         # the gather matched the whole download
    assert runner(cuda_config("baseline")).state == "OK"        # later checks: the gather alone
    runner.ref[runner.st.outputs[0][0]] = runner.ref[runner.st.outputs[0][0]] + 1.0
    res = runner(cuda_config("baseline"))
    assert res.state == "INVALID" and "wrong output" in (res.reason or "")
