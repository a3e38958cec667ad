"""Generated CUDA kernels run on the CPU (tests/apps/cuda_on_cpu.py) match the NumPy reference.

The GPU test (test_stencil_cuda.py) is the real check; this one runs where
there is no GPU, with the block's threads as real threads and
``__syncthreads`` as a barrier, so shared-memory and ring-buffer variants,
fission and register-control variants are checked before a device is had.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from apps.stencil.cstuner import CSTUNER_STENCILS, cstuner_stencil
from tests.apps import cuda_on_cpu
from tests.apps.cuda_on_cpu import gxx_available, run_on_cpu
from tests.apps.stencil_cases import (
    CUDA_OPTS,
    cuda_case_applies,
    cuda_config,
    selected_params,
)

pytestmark = pytest.mark.skipif(not gxx_available(), reason="g++ not installed")
ISSUE17 = ("minb", "maxrreg", "maxrreg_stream", "cse", "cse_stream", "cse_smem", "fission_2", "fission_3_stream",
           "fission_5_stream", "fission_5_retime", "ring", "ring_merge", "ring_fission")


def _check(name: str, opt: str) -> None:
    cuda_on_cpu.check_case(name, opt)


@pytest.mark.parametrize("name,opt", [("helmholtz", "ring"), ("addsgd4", "ring_fission")])
def test_ring_buffer_and_fission_match_numpy_on_the_cpu(name: str, opt: str) -> None:
    _check(name, opt)


def test_a_wrong_kernel_is_caught() -> None:
    st = cstuner_stencil("j3d7pt", 32)
    data = st.make_data(0)
    out = run_on_cpu(st, cuda_config("ring"), data)
    other = st.reference(st.make_data(1))
    assert not np.allclose(out["out"], other["out"])


_ALL_CASES = [(n, o) for n in CSTUNER_STENCILS for o in CUDA_OPTS if cuda_case_applies(o, cstuner_stencil(n, 32))]


@pytest.fixture(scope="module")
def checked_all(request: pytest.FixtureRequest) -> dict[tuple[str, str], BaseException | None]:
    """The selected cases of the test below checked once, ``os.cpu_count()`` at a time: what each raised, or None.

    Why: each case is a g++ compile (one core) and a run of the kernel's
    threads; checked one test at a time the 229 cases took 223 s here, 161 s
    this way on 2 cores. Each test still raises its own case's failure (or
    skip), and nothing else; ``-k`` one case checks only that one.
    """
    cases = [(p["name"], p["opt"]) for p in
             selected_params(request, "test_every_stencil_and_optimisation_matches_numpy_on_the_cpu")]

    def one(case: tuple[str, str]) -> BaseException | None:
        try:
            _check(*case)
        except BaseException as exc:  # noqa: BLE001 - assertion, skip or error: the case's own test raises it
            return exc
        return None

    with ThreadPoolExecutor(os.cpu_count() or 2) as pool:
        return dict(zip(cases, pool.map(one, cases)))


@pytest.mark.slow
@pytest.mark.parametrize("name,opt", _ALL_CASES)
def test_every_stencil_and_optimisation_matches_numpy_on_the_cpu(
        name: str, opt: str, checked_all: dict[tuple[str, str], BaseException | None]) -> None:
    failure = checked_all[(name, opt)]
    if failure is not None:
        raise failure


def test_issue17_cases_are_in_the_shared_cases() -> None:
    assert set(ISSUE17) <= set(CUDA_OPTS)
