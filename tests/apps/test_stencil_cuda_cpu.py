"""Generated CUDA kernels run on the CPU (tests/apps/cuda_on_cpu.py) match the NumPy reference.

The GPU test (test_stencil_cuda.py) is the real check; this one runs where
there is no GPU, with the block's threads as real threads and
``__syncthreads`` as a barrier, so shared-memory and ring-buffer variants,
fission and register-control variants are checked before a device is had.
"""

from __future__ import annotations

import numpy as np
import pytest

from apps.stencil.cstuner import CSTUNER_STENCILS, cstuner_stencil
from tests.apps import cuda_on_cpu
from tests.apps.cuda_on_cpu import gxx_available, run_on_cpu
from tests.apps.stencil_cases import (
    CUDA_OPTS,
    ParallelCases,
    cuda_case_applies,
    cuda_config,
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


@pytest.mark.slow
@pytest.mark.parametrize("name,opt", _ALL_CASES)
def test_every_stencil_and_optimisation_matches_numpy_on_the_cpu(name: str, opt: str,
                                                                 parallel_cases: ParallelCases) -> None:
    parallel_cases.run("test_every_stencil_and_optimisation_matches_numpy_on_the_cpu", _check, name=name, opt=opt)


def test_issue17_cases_are_in_the_shared_cases() -> None:
    assert set(ISSUE17) <= set(CUDA_OPTS)
