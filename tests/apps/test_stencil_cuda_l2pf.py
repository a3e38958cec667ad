"""``l2pf``: streaming kernels prefetch the planes ahead into L2 (``prefetch.global.L2``), without registers.

Checked here: the kernels still match NumPy on the CPU emulator, whose ``l2_prefetch`` aborts on an address
outside every kernel argument (a prefetch near a chunk's or the grid's end must stay inside); the source
prefetches the plane ``l2pf`` steps ahead of the one each step loads, at each of the thread's points, and
the current plane in a chunk's last ``l2pf`` steps; nothing changes with ``l2pf=0``; the rules; the space holds
the parameter only when asked; nvcc builds it (here, without a GPU), and the registers it costs.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from apps.stencil.cstuner import CSTUNER_STENCILS, cstuner_stencil
from apps.stencil.cuda_gen import cuda_baseline, cuda_why_illegal, generate_cuda
from apps.stencil.space import cuda_space
from measurement.cuda import compile_cuda, nvcc_available
from tests.apps import cuda_on_cpu
from tests.apps.stencil_cases import (
    CUDA_OPTS,
    ParallelCases,
    assert_matches_reference,
    cuda_config,
)

#: name -> (stencil, grid (nz, ny, nx), options over ``cuda_baseline()``); chunks (nz / sb) of 3 with 2 planes
#: ahead (the clamp in the last two steps), radius 1 to 4, register and shared-memory queues, cp.async, merging,
#: fission, unrolling
CASES: dict[str, tuple[str, tuple[int, int, int], dict[str, Any]]] = {
    "j3d7pt_chunk3_ahead2": ("j3d7pt", (24, 32, 32), {"sd": "z", "sb": 8, "bmy": 2, "l2pf": 2}),
    "j3d27pt_smem_prefetch": ("j3d27pt", (32, 32, 32), {"sd": "z", "sb": 2, "smem": True, "prefetch": True,
                                                         "bx": 16, "by": 2, "bmy": 2, "l2pf": 4}),
    "hypterm_zq_chunk3": ("hypterm", (12, 32, 32), {"sd": "z", "sb": 4, "zq": True, "maxrreg": 128, "l2pf": 2}),
    "hypterm_zq_prefetch_zqs": ("hypterm", (16, 32, 32), {"sd": "z", "sb": 2, "zq": True, "prefetch": True,
                                                           "zqs": True, "bx": 16, "by": 2, "l2pf": 1}),
    "addsgd4_fission_uf4": ("addsgd4", (32, 32, 32), {"sd": "z", "sb": 2, "uf": 4, "fis": 3, "bx": 32, "by": 2,
                                                      "l2pf": 4}),
    "addsgd6_stream_prefetch": ("addsgd6", (24, 32, 32), {"sd": "z", "sb": 2, "prefetch": True, "bx": 32, "by": 1,
                                                          "cmy": 2, "l2pf": 2}),
    "rhs4center_cyclic": ("rhs4center", (16, 32, 32), {"sd": "z", "sb": 2, "bx": 16, "by": 2, "cmx": 2, "l2pf": 1}),
    "helmholtz_uf2": ("helmholtz", (32, 32, 32), {"sd": "z", "sb": 4, "uf": 2, "cse": True, "l2pf": 2}),
    "cheby_smem": ("cheby", (32, 32, 32), {"sd": "z", "sb": 2, "smem": True, "bx": 16, "by": 4, "l2pf": 4}),
}
FAST = ("j3d7pt_chunk3_ahead2", "hypterm_zq_chunk3")


def _case(case: str) -> tuple[Any, dict[str, Any]]:
    name, shape, opts = CASES[case]
    return replace(cstuner_stencil(name, 32), shape=shape), {**cuda_baseline(), **opts}


def _check(case: str) -> None:
    st, c = _case(case)
    assert cuda_why_illegal(st, c) is None, case
    cuda_on_cpu.assert_matches(st, cuda_on_cpu.emulate(st, c, "deferred"), case)


@pytest.mark.parametrize("case", FAST)
def test_l2_prefetch_matches_numpy_and_stays_inside_the_arrays(case: str) -> None:
    _check(case)


@pytest.mark.slow
@pytest.mark.parametrize("case", sorted(CASES))
def test_every_l2_prefetch_case_matches_numpy_and_stays_inside_the_arrays(case: str,
                                                                          parallel_cases: ParallelCases) -> None:
    parallel_cases.run("test_every_l2_prefetch_case_matches_numpy_and_stays_inside_the_arrays", _check, case=case)


def test_each_step_prefetches_the_plane_l2pf_ahead_at_each_point_and_the_current_one_at_the_end() -> None:
    st, c = _case("j3d7pt_chunk3_ahead2")
    src = generate_cuda(st, c).source
    loop = src[src.index("for (int z"):]
    pz = st.padded_shape[1] * st.padded_shape[2]
    px = st.padded_shape[2]
    assert f"const int zp = z + 2 < 3 ? {2 * pz} : 0;" in loop  # chunk of 3: the last two steps clamp
    loads = set(re.findall(r"__ldg\(p_in \+ \((-?\d+)\)\)", loop))
    prefetched = re.findall(r"l2_prefetch\(p_in \+ \(zp \+ (-?\d+)\)\);", loop)
    assert sorted(map(int, prefetched)) == [pz, pz + px]  # plane hi (= 1) at the thread's two points (bmy=2)
    assert {str(o) for o in map(int, prefetched)} <= loads  # offsets the step itself loads, planes ahead
    assert loop.index("l2_prefetch") < loop.index("__ldg")  # issued before the step's own loads


def test_without_l2pf_sources_are_unchanged() -> None:
    for name in CSTUNER_STENCILS:
        st = cstuner_stencil(name, 32)
        for opt in ("stream", "smem_prefetch", "zq", "fission_3_stream"):
            c = cuda_config(opt)
            if cuda_why_illegal(st, c) is None:
                src = generate_cuda(st, c).source
                assert generate_cuda(st, {**c, "l2pf": 0}).source == src and "l2_prefetch" not in src


def test_rules_name_what_l2pf_needs() -> None:
    st = cstuner_stencil("j3d7pt", 32)
    b = cuda_baseline()
    assert "streaming" in cuda_why_illegal(st, {**b, "l2pf": 1})
    assert "ring" in cuda_why_illegal(st, {**cuda_config("ring"), "l2pf": 1})
    assert "retime" in cuda_why_illegal(st, {**cuda_config("retime"), "l2pf": 1})
    assert "chunk" in cuda_why_illegal(st, {**b, "sd": "z", "sb": 16, "l2pf": 2})  # 2 planes a chunk
    assert "l2pf=3" in cuda_why_illegal(st, {**b, "sd": "z", "sb": 2, "l2pf": 3})  # not a legal value


def test_the_space_holds_l2pf_only_when_asked_and_then_with_its_rules() -> None:
    st = cstuner_stencil("j3d7pt", 64)
    assert "l2pf" not in cuda_space(st)
    s = cuda_space(st, opt_in=["l2pf"])
    assert "l2pf" in s
    for c in s.sample(np.random.default_rng(3), 120):
        assert cuda_why_illegal(st, c) is None, c
        if c["l2pf"]:
            assert c["sd"] == "z" and not c["ring"] and not c["retime"] and c["l2pf"] < 64 // c["sb"]
    for c in cuda_space(st).sample(np.random.default_rng(4), 100):  # the default: l2pf = 0
        assert s.is_valid({**c, "l2pf": 0})
    with pytest.raises(ValueError, match="opt_in"):
        cuda_space(st, opt_in=["warp_specialise"])


def test_space_counts_grow_only_by_streaming_with_l2pf() -> None:
    """Asked for, ``l2pf`` adds to the default space one copy of every streaming configuration (neither ring
    nor retime) for each value with fewer planes ahead than a chunk has, and nothing else."""
    st = cstuner_stencil("j3d7pt", 64)

    def count(opt_in: list[str], expr: str | None) -> int:
        s = cuda_space(st, opt_in=opt_in)
        if expr:
            s.require(expr, name="fixed")
        got = s.count_valid(10**9, merge=True)
        assert got is not None
        return got

    before = count([], None)
    assert before == 19_916_652  # test_stencil_cuda_stage.py's count before zqsn (j3d7pt has no zqsn)
    assert count(["l2pf"], "l2pf == 0") == before
    added = {k: count(["l2pf"], f"l2pf == {k}") for k in (1, 2, 4)}
    for k, n in added.items():
        assert n == count([], f"sd == 'z' and not ring and not retime and {k} * sb < 64") > 0, k
    assert added[1] > added[2] > added[4]  # sb = 32, then 16, no longer leave room
    assert count(["l2pf"], None) == before + sum(added.values())


@pytest.mark.cuda
@pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")
@pytest.mark.parametrize("case", sorted(CASES))
def test_nvcc_builds_l2_prefetch_kernels(case: str, parallel_cases: ParallelCases) -> None:
    parallel_cases.run("test_nvcc_builds_l2_prefetch_kernels", _build, case=case)


def _build(case: str) -> None:
    st, c = _case(case)
    k = generate_cuda(st, c)  # dynamic shared memory as on the device
    b = compile_cuda(k.source, arch="sm_90", options=k.options)
    assert b.cubin and b.registers


def test_cases_cover_what_they_say() -> None:
    chunks, radii = set(), set()
    for case in CASES:
        st, c = _case(case)
        chunks.add(st.shape[0] // c["sb"] - c["l2pf"])
        radii.add(st.halo[0])
    assert min(chunks) == 1 and radii == {1, 2, 3, 4} and "zq" in CUDA_OPTS
    assert {CASES[k][0] for k in CASES} == set(CSTUNER_STENCILS)  # all eight stencils


@pytest.mark.cuda
@pytest.mark.parametrize("case", sorted(CASES))
def test_l2_prefetch_cases_match_numpy_on_the_gpu(case: str, gpu_backend) -> None:  # type: ignore[no-untyped-def]
    from apps.stencil.runner import CudaStencilRunner

    st, c = _case(case)
    runner = CudaStencilRunner(st, gpu_backend, repeats=1, warmup=0)
    res = runner(c)
    assert_matches_reference(runner, res)


def test_the_app_and_the_benchmark_pass_the_opt_in_to_the_space() -> None:
    from scripts.bench_stencil_gpu import _app

    assert "l2pf" in _app(stencil="j3d7pt", backend="cuda", size=64, cuda_opt_in=["l2pf"]).space()
    assert "l2pf" not in _app(stencil="j3d7pt", backend="cuda", size=64, cuda_opt_in=None).space()


def test_the_baseline_and_the_app_seed_belong_to_a_space_with_l2pf() -> None:
    """A seed without ``l2pf`` is refused by a space that holds it (session 27's searches fell back to sampling)."""
    from apps.stencil.cuda_gen import cuda_baseline
    from scripts.bench_stencil_gpu import _app, _cuda_seeds

    app = _app(stencil="hypterm", backend="cuda", size=64, cuda_opt_in=["l2pf"])
    space = app.space()
    assert cuda_baseline(["l2pf"])["l2pf"] == 0 and "l2pf" not in cuda_baseline()
    assert app.seed_configurations() == [cuda_baseline(["l2pf"])]
    seeds = _cuda_seeds(app.stencil, more=True, opt_in=["l2pf"])
    assert len(seeds) > 5 and all(space.is_valid(c) for c in seeds)
    with pytest.raises(ValueError, match="OPT_IN|l2pf|not among"):
        cuda_baseline(["warp_specialise"])
