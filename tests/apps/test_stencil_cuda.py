"""csTuner CUDA kernels: every optimisation compiles with nvcc here; on a GPU every one matches NumPy."""

from __future__ import annotations

import functools
import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from apps.stencil.cstuner import CSTUNER_STENCILS, cstuner_stencil
from apps.stencil.cuda_gen import generate_cuda
from measurement.cuda import compile_cuda, nvcc_available
from tests.apps.stencil_cases import (
    CUDA_OPTS,
    cuda_case_applies,
    cuda_config,
    selected_params,
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


class _Compiled:
    """Builds of (stencil, option set) cases, compiled on first request in parallel and kept for the module.

    Why: nvcc is single-threaded and the cases are independent; compiled one
    test at a time, the 229 cases took 178 s of one core (the file 192 s,
    95 s this way on 2 cores). Each test still looks up and checks its own
    build (an exception is kept and raised in that case's test only), and
    the first request compiles the cases of that test that the session
    runs, so ``-k`` one case compiles only that one.
    """

    def __init__(self, request: pytest.FixtureRequest) -> None:
        self._request = request
        self._done: dict[tuple[str, str], Any] = {}

    def get(self, case: tuple[str, str], test_name: str) -> Any:
        group = [(p.get("name", "j3d7pt"), p["opt"]) for p in selected_params(self._request, test_name)]
        todo = [c for c in group + [case] if c not in self._done]
        if todo:
            with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
                self._done.update(zip(todo, pool.map(self._one, todo)))
        got = self._done[case]
        if isinstance(got, BaseException):
            raise got
        return got

    @staticmethod
    def _one(case: tuple[str, str]) -> Any:
        name, opt = case
        try:
            return compile_cuda(generate_cuda(cstuner_stencil(name, 32), cuda_config(opt)).source, arch="sm_90")
        except Exception as exc:  # noqa: BLE001 - kept for the case's own test to raise
            return exc


@pytest.fixture(scope="module")
def compiled(request: pytest.FixtureRequest) -> _Compiled:
    return _Compiled(request)


@needs_nvcc
@pytest.mark.parametrize("opt", [o for _, o in _cases(False)])
def test_every_optimisation_compiles_for_j3d7pt(opt: str, compiled: _Compiled) -> None:
    build = compiled.get(("j3d7pt", opt), "test_every_optimisation_compiles_for_j3d7pt")
    assert build.cubin[:4] == b"\x7fELF"
    assert build.registers is not None and build.registers > 0


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name,opt", _cases(True))
def test_every_stencil_and_optimisation_compiles(name: str, opt: str, compiled: _Compiled) -> None:
    assert compiled.get((name, opt), "test_every_stencil_and_optimisation_compiles").cubin[:4] == b"\x7fELF"


@pytest.fixture(scope="module")
def gpu_builds():  # type: ignore[no-untyped-def]
    """Runners and kernels of every case, compiled in parallel (nvcc dominates the time)."""
    import os
    from concurrent.futures import ThreadPoolExecutor

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
