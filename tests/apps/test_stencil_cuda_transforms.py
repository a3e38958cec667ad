"""Issue 17's CUDA generator transformations: register control, kernel fission, kept subexpressions.

The GPU check (every transformation matches NumPy on small grids for all
eight stencils) is ``test_stencil_cuda.py``'s parametrised test, whose cases
include these option sets (``tests/apps/stencil_cases.py``); here: the space
counts, the rules, and what nvcc makes of the kernels (compile only).
"""

from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor

import pytest

from apps.stencil.cstuner import CSTUNER_STENCILS, cstuner_stencil
from apps.stencil.cuda_gen import (
    cuda_baseline,
    cuda_why_illegal,
    fission_groups,
    generate_cuda,
)
from apps.stencil.space import cuda_space
from measurement.cuda import compile_cuda, nvcc_available, parse_ptxas
from tests.apps.stencil_cases import (
    CUDA_OPTS,
    count_space,
    cuda_case_applies,
    cuda_config,
)

needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")
NEW_OPTS = ("minb", "maxrreg", "maxrreg_stream", "cse", "cse_stream", "cse_smem", "fission_2", "fission_3_stream",
            "fission_5_stream", "fission_5_retime", "ring", "ring_merge", "ring_fission")


def test_fission_groups_partition_the_outputs_in_order() -> None:
    st = cstuner_stencil("hypterm", 16)
    for k in range(1, 6):
        groups = fission_groups(st, k)
        assert len(groups) == k
        assert [o for g in groups for o, _ in g] == [o for o, _ in st.outputs]
        assert max(map(len, groups)) - min(map(len, groups)) <= 1


def test_fission_kernels_read_only_the_inputs_of_their_outputs() -> None:
    st = cstuner_stencil("addsgd4", 32)
    k = generate_cuda(st, {**cuda_baseline(), "fis": 3})
    assert k.kernels == ("stencil_kernel_0", "stencil_kernel_1", "stencil_kernel_2")
    bodies = k.source.split('extern "C"')[1:]
    for c, body in enumerate(bodies):
        read = set(re.findall(r"p_(\w+) = ", body))
        # component c of the dissipation reads u_c, um_c, up_c and rho, and writes upn_c
        assert read == {f"u{c}", f"um{c}", f"up{c}", "rho", f"upn{c}"}, read


def test_register_cap_drops_launch_bounds_and_passes_maxrregcount() -> None:
    st = cstuner_stencil("hypterm", 32)
    k = generate_cuda(st, {**cuda_baseline(), "maxrreg": 96})
    assert k.options == ("-maxrregcount=96",) and "__launch_bounds__" not in k.source
    k = generate_cuda(st, {**cuda_baseline(), "minb": 4})
    assert k.options == () and "__launch_bounds__(128, 4)" in k.source


def test_rules_of_the_new_parameters() -> None:
    st = cstuner_stencil("j3d7pt", 32)
    b = cuda_baseline()
    assert "launch bounds" in cuda_why_illegal(st, {**b, "maxrreg": 64, "minb": 2})
    assert "exceed" in cuda_why_illegal(st, {**b, "maxrreg": 168, "bx": 32, "by": 16})
    assert "fis=2" in cuda_why_illegal(st, {**b, "fis": 2})
    assert "cse" in cuda_why_illegal(st, {**b, "sd": "z", "sb": 2, "retime": True, "cse": True})
    for c in ({**b, "maxrreg": 64, "minb": 2}, {**b, "fis": 2}, {**b, "sd": "z", "sb": 2, "retime": True, "cse": True}):
        assert not cuda_space(st).is_valid(c)


def test_space_counts_with_the_new_parameters() -> None:
    """Without ring buffers (whose shared memory depends on the groups) fission is independent of every
    other knob: each legal kernel count holds the same number of configurations; a one-output stencil
    has no fission at all; cse doubles every non-retimed configuration; ring buffers need smem."""
    hyp = cstuner_stencil("hypterm", 64)
    total = count_space(hyp)  # the whole space, cached: test_stencil_cuda_stage.py counts it too
    per_fis, per_fis_ring = [], []
    for k in range(1, 6):
        for ring, acc in ((False, per_fis), (True, per_fis_ring)):
            s = cuda_space(hyp)
            s.require(f"fis == {k} and ring == {ring} and not zq", name="fixed fission")  # zq: queue sizes
            acc.append(s.count_valid(10**9, merge=True))
    s = cuda_space(hyp)
    s.require("zq", name="z-queues in shared memory (their size depends on the groups)")
    with_zq = s.count_valid(10**9, merge=True)
    assert total is not None and total == sum(per_fis) + sum(per_fis_ring) + with_zq and len(set(per_fis)) == 1
    assert per_fis_ring[0] <= per_fis_ring[-1]  # one kernel per output needs the smallest rings
    s = cuda_space(hyp)
    s.require("ring and not smem", name="ring without smem")
    assert s.count_valid(10**9, merge=True) == 0
    j = cstuner_stencil("j3d7pt", 64)
    s = cuda_space(j)
    s.require("fis != 1", name="no fission")
    assert s.count_valid(10**9, merge=True) == 0
    counts = {}
    for cse in (False, True):
        for rt in (False, True):
            s = cuda_space(j)
            s.require(f"cse == {cse} and retime == {rt}", name="fixed")
            counts[cse, rt] = s.count_valid(10**9, merge=True)
    assert counts[True, True] == 0 and counts[True, False] == counts[False, False] > 0


@needs_nvcc
@pytest.mark.cuda
def test_fission_and_register_cap_lower_ptxas_registers() -> None:
    st = cstuner_stencil("hypterm", 32)
    b = cuda_baseline()
    cfgs = [b, {**b, "fis": 5}, {**b, "maxrreg": 64}]
    with ThreadPoolExecutor(3) as pool:
        builds = list(pool.map(lambda c: compile_cuda(generate_cuda(st, c).source, arch="sm_90",
                                                      options=generate_cuda(st, c).options), cfgs))
    whole, fissioned, capped = (bd.registers for bd in builds)
    assert fissioned < whole and capped <= 64
    assert len(re.findall(r"Used \d+ registers", builds[1].log)) == 5  # five kernels, the largest reported


def test_ptxas_of_several_kernels_reports_the_largest_and_summed_spills() -> None:
    log = ("ptxas info    : Used 40 registers, 8 bytes spill stores, 4 bytes spill loads\n"
           "ptxas info    : Used 90 registers, 16 bytes spill stores, 8 bytes spill loads, 2048 bytes smem\n")
    assert parse_ptxas(log) == {"registers": 90, "spill_stores": 24, "spill_loads": 12, "smem_bytes": 2048}


@needs_nvcc
@pytest.mark.cuda
@pytest.mark.slow
@pytest.mark.parametrize("name", CSTUNER_STENCILS)
def test_every_new_transformation_compiles_for_every_stencil(name: str) -> None:
    st = cstuner_stencil(name, 32)
    opts = [o for o in NEW_OPTS if cuda_case_applies(o, st)]
    with ThreadPoolExecutor(4) as pool:
        builds = list(pool.map(lambda o: compile_cuda(generate_cuda(st, cuda_config(o)).source, arch="sm_90",
                                                      options=generate_cuda(st, cuda_config(o)).options), opts))
    assert all(bd.cubin[:4] == b"\x7fELF" for bd in builds)
    assert set(NEW_OPTS) <= set(CUDA_OPTS)
