"""``zq``: the column z-queues of the register-queue kernel in dynamic shared memory (issue 17, Nsight Compute).

Here, without a GPU: the rules (the generator's and the space's, the
latter's decision tree checked against the generator's count over every
merge pattern), the space counts (``zq`` adds configurations only to plain
register-queue streaming, none elsewhere), the sources of existing
configurations unchanged, the layout (one dynamic array, no barriers, no
``%``, only one-plane queues left in registers), the kernels compiled with
nvcc (ptxas: no static shared memory) and run on the CPU emulator against
NumPy, and the runner's launch path through ``CudaBackend.run`` with a
stand-in driver.  On a GPU (marker ``cuda``): every zq option set matches
NumPy on 32^3 for all eight stencils, the same cases as
``test_stencil_cuda.py``'s parametrised test.

``zq`` with ``prefetch`` (the next plane of every queue copied with
``cp.async`` into a spare slot one step ahead): the rules and the slot in
the bytes, the layout (one copy per queue per step, branch-free, the
waits), ptxas (no register cost for hypterm under 128), and the kernels
against NumPy on the emulator with the copies landing as late and as
early as a device may land them, on grids whose z extent gives chunks
shorter than the queues, of odd length and of one plane; the same cases
on the GPU (marker ``cuda``).
"""

from __future__ import annotations

import hashlib
import itertools
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any
from unittest import mock

import numpy as np
import pytest

from apps.stencil.cstuner import CSTUNER_STENCILS, cstuner_stencil
from apps.stencil.cuda_gen import (
    DSMEM_LIMIT,
    _zq_rule_threads,
    cuda_baseline,
    cuda_why_illegal,
    cuda_zq_doubles,
    generate_cuda,
)
from apps.stencil.space import cuda_space
from measurement.cuda import compile_cuda, nvcc_available
from tests.apps import cuda_on_cpu
from tests.apps.cuda_on_cpu import check_case
from tests.apps.stencil_cases import (
    CUDA_OPTS,
    ZQ_OPTS,
    ParallelCases,
    assert_matches_reference,
    compile_case,
    count_space,
    cuda_case_applies,
    cuda_config,
    gpu_runners_or_skip,
    static_dsmem,
)
from tests.apps.test_stencil_cuda_dsmem import fake_gpu  # noqa: F401 - the stand-in driver fixture

needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")
ZQ = {"sd": "z", "sb": 2, "zq": True}


def _cases() -> list[tuple[str, str]]:
    return [(n, o) for n in CSTUNER_STENCILS for o in ZQ_OPTS if cuda_case_applies(o, cstuner_stencil(n, 32))]


# ---- rules and space ---------------------------------------------------------------------------------------
def test_zq_needs_plain_register_queue_streaming_and_fits_the_opt_in_maximum() -> None:
    st = cstuner_stencil("hypterm", 64)
    b = cuda_baseline()
    bad = [("needs streaming", {**b, "zq": True}),
           ("not with smem", {**b, **ZQ, "smem": True}),
           ("not with smem, ring", {**b, **ZQ, "smem": True, "ring": True}),
           ("retime", {**b, **ZQ, "retime": True}),
           ("not with smem, ring or retime", {**b, **ZQ, "prefetch": True, "smem": True}),
           ("not with smem, ring or retime", {**b, **ZQ, "prefetch": True, "smem": True, "ring": True}),
           ("needs streaming", {**b, "zq": True, "prefetch": True})]
    for why, c in bad:
        assert why in str(cuda_why_illegal(st, c)), (why, cuda_why_illegal(st, c))
        assert not cuda_space(st).is_valid(c)
        with pytest.raises(ValueError, match="illegal"):
            generate_cuda(st, c)
    ok = {**b, **ZQ, "bx": 32, "by": 8}  # 54 elements x 256 threads x 8 B = 110,592 B
    assert cuda_why_illegal(st, ok) is None and cuda_space(st).is_valid(ok)
    assert generate_cuda(st, ok).shared == (110_592,)
    big = {**ok, "by": 32}  # 1024 threads: 442,368 B
    assert "442368 bytes of shared memory per block > 232448" in str(cuda_why_illegal(st, big))
    assert "fission" in str(cuda_why_illegal(st, big)) and not cuda_space(st).is_valid(big)
    assert cuda_why_illegal(st, {**big, "fis": 3}) is not None  # 36 x 1024 x 8 = 294,912 B: still too much
    assert cuda_why_illegal(st, {**big, "fis": 5}) is None  # 27 x 1024 x 8 = 221,184 B
    assert generate_cuda(st, {**big, "fis": 5}).shared == tuple(q * 1024 * 8 for q in (9, 18, 18, 27, 27))
    # with prefetch: one more slot per queue (6 queues: 60 elements), in the rule and in the launch's bytes
    pf = {**ok, "prefetch": True}
    assert cuda_why_illegal(st, pf) is None and cuda_space(st).is_valid(pf)
    assert cuda_zq_doubles(st, pf) == (60,) and generate_cuda(st, pf).shared == (60 * 256 * 8,)
    assert cuda_zq_doubles(st, {**big, "fis": 5, "prefetch": True}) == (10, 20, 20, 30, 30)
    big_pf = {**big, "fis": 5, "prefetch": True}  # 30 x 1024 x 8 = 245,760 B: fits without the slot, not with it
    assert "245760 bytes of shared memory per block > 232448" in str(cuda_why_illegal(st, big_pf))
    assert not cuda_space(st).is_valid(big_pf) and cuda_space(st).is_valid({**big, "fis": 5})
    assert cuda_why_illegal(st, {**big_pf, "by": 16}) is None and cuda_space(st).is_valid({**big_pf, "by": 16})


def test_a_configuration_without_the_zq_key_is_the_same_as_zq_off() -> None:
    st = cstuner_stencil("hypterm", 32)
    c = cuda_config("stream")
    old = {k: v for k, v in c.items() if k not in ("zq", "dsmem")}
    assert cuda_why_illegal(st, old) is None and cuda_space(st).is_valid({**old, "dsmem": False, "zq": False})
    assert generate_cuda(st, old) == generate_cuda(st, c)
    assert "zq" not in generate_cuda(st, c).source.split("\n")[0]
    assert "'zq': True" in generate_cuda(st, cuda_config("zq")).source.split("\n")[0]


#: sha256[:16] of zq sources generated before ``zq`` took ``prefetch`` (commit 893aaa0)
ZQ_BEFORE = {("hypterm", "zq"): "dc132c7dd811c1ef", ("j3d27pt", "zq_merge"): "56eb3b52fed40be5",
             ("rhs4center", "zq_fission"): "d68c58f63d4e3436", ("j3d7pt", "zq_cyclic_unroll"): "40666be78c3f92a3",
             ("addsgd6", "zq"): "bc725542297b76ec"}


def test_zq_sources_without_prefetch_are_byte_identical_to_before_prefetch() -> None:
    for (name, opt), digest in ZQ_BEFORE.items():
        k = generate_cuda(cstuner_stencil(name, 32), cuda_config(opt))
        assert hashlib.sha256(k.source.encode()).hexdigest()[:16] == digest, (name, opt)
        assert "zq_async" not in k.source and "cp.async" not in k.source


#: sha256[:16] of sources generated before ``zq`` existed (commit 5d8c2b6), configurations without the key
BEFORE = {("j3d27pt", "stream_merge"): "94caae5d66aaf6b4", ("hypterm", "stream"): "956bdc6b72dd9e55",
          ("rhs4center", "cse_stream"): "2f48d0c62c2cf4dc", ("addsgd6", "fission_3_stream"): "c5844849c4824837",
          ("hypterm", "maxrreg_stream"): "3399d8ea41b56c0c", ("j3d7pt", "stream_stcs"): "512a4b161134ccc3",
          ("cheby", "prefetch"): "69c11084a4f45318", ("helmholtz", "cse_smem"): "668d422bb0a1526e",
          ("rhs4center", "ring_dsmem_wide"): "16daae5338cadc12"}


@pytest.mark.parametrize("with_key", [False, True])
def test_existing_configurations_generate_byte_identical_sources(with_key: bool) -> None:
    for (name, opt), digest in BEFORE.items():
        c = cuda_config(opt)
        if not with_key:
            del c["zq"]
        k = generate_cuda(cstuner_stencil(name, 32), c)
        assert hashlib.sha256(k.source.encode()).hexdigest()[:16] == digest, (name, opt)
        assert "zq" not in k.source


#: cuda_space(st).count_valid() at 64^3 before ``zq`` existed (commit 5d8c2b6, with ``dsmem``)
COUNTS_BEFORE = {"j3d7pt": 14_060_604, "hypterm": 48_237_372, "rhs4center": 30_870_204}


_count = count_space  # cached for the session: the zq, dsmem, stage and transforms tests share counts


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n != "j3d7pt" else [])
                                  for n in COUNTS_BEFORE])
def test_space_counts_are_unchanged_without_zq_and_grow_only_by_plain_streaming(name: str) -> None:
    st = cstuner_stencil(name, 64)
    assert _count(st, "not zq") == COUNTS_BEFORE[name]
    assert _count(st, "zq and (sd == 'none' or smem or ring or retime or dsmem)") == 0
    with_zq = _count(st, "zq and not zqs")  # zqs (test_stencil_cuda_stage.py) adds to zq with prefetch only
    assert with_zq > 0 and _count(st, "not zqs") == COUNTS_BEFORE[name] + with_zq
    plain = _count(st, "not zq and sd == 'z' and not smem and not ring and not prefetch and not retime")
    zq_alone = _count(st, "zq and not prefetch")
    if name == "j3d7pt":  # 3 elements per point, at most 8 points x 1024 threads x 3 x 8 B = 196,608 B: all fit
        assert zq_alone == plain
    else:  # hypterm: 54 per point, rhs4center: 105 (one kernel), so large blocks of merged points do not fit
        assert 0 < zq_alone < plain
    # with prefetch a slot more per queue (the register prefetch's configurations, as many as without)
    plain_pf = _count(st, "not zq and sd == 'z' and not smem and prefetch")
    zq_pf = with_zq - zq_alone
    assert plain_pf == plain
    if name == "j3d7pt":  # a 64 x 64 tile at most: 4096 points x 4 elements x 8 B = 131,072 B, all fit
        assert zq_pf == zq_alone
    else:
        assert 0 < zq_pf < zq_alone


def test_space_samples_zq_configurations_that_generate() -> None:
    st = cstuner_stencil("hypterm", 320)
    s = cuda_space(st)
    s.require("zq", name="z-queues in shared memory only")
    got = s.sample(np.random.default_rng(5), 40)
    assert got and all(cuda_why_illegal(st, c) is None for c in got)
    for c in got[:5]:
        k = generate_cuda(st, c)
        assert 0 < k.dynamic_smem <= DSMEM_LIMIT and len(k.shared) == c["fis"]


def _rule_agrees(name: str, prefetch: bool = False) -> None:
    """The space's bound on the threads per block (``_zq_rule_threads``) says exactly which block shapes'
    z-queues fit, by the generator's count, on every merge pattern and block shape (random points rarely
    reach cyclic merging with small strides, where neighbouring points share columns); with ``prefetch``
    each queue has its spare slot."""
    st = cstuner_stencil(name, 64)
    most = compile(_zq_rule_threads(st, int(prefetch)), "<zq rule>", "eval")
    pow2 = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    merges = [m for m in itertools.product((1, 2, 4), repeat=4) if np.prod(m) <= 8]
    n = fits = 0
    for fis in range(1, len(st.outputs) + 1):
        for (bmx, bmy, cmx, cmy), bx, by in itertools.product(merges, pow2, pow2):
            if not 32 <= bx * by <= 1024:
                continue
            c = {"bx": bx, "by": by, "bz": 1, "bmx": bmx, "bmy": bmy, "bmz": 1, "cmx": cmx, "cmy": cmy, "cmz": 1,
                 "fis": fis, "prefetch": prefetch}
            per = cuda_zq_doubles(st, c)
            ok = min(per) > 0 and max(per) * bx * by * st.itemsize <= DSMEM_LIMIT
            assert (bx * by <= eval(most, {"min": min}, c)) == ok, (name, c, per)
            n += 1
            fits += ok
    assert n > 1000 and 0 < fits


@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("name", ["j3d27pt"])  # its count depends on the strides (rhs4center too: slow)
def test_space_rule_counts_the_queue_elements_exactly(name: str, prefetch: bool) -> None:
    _rule_agrees(name, prefetch)


@pytest.mark.slow
@pytest.mark.parametrize("prefetch", [False, True])
@pytest.mark.parametrize("name", CSTUNER_STENCILS)
def test_space_rule_counts_the_queue_elements_exactly_for_every_stencil(name: str, prefetch: bool) -> None:
    _rule_agrees(name, prefetch)


def test_zq_rules_match_the_space_on_random_points_near_zq() -> None:
    """Random legal points with zq switched on, then one parameter changed: generator == space."""
    for name in ("hypterm", "rhs4center", "j3d27pt"):
        from apps.stencil.cuda_gen import CUDA_PARAMS, OPT_IN_PARAMS

        st = cstuner_stencil(name, 64)
        space = cuda_space(st, opt_in=OPT_IN_PARAMS)  # the generator knows every parameter
        rng = np.random.default_rng(11)

        legal = 0
        for c in space.sample(rng, 60):
            c = {**c, "zq": True}
            k = list(CUDA_PARAMS)[rng.integers(len(CUDA_PARAMS))]
            for p in (c, {**c, k: CUDA_PARAMS[k][rng.integers(len(CUDA_PARAMS[k]))]}):
                ok = cuda_why_illegal(st, p) is None
                legal += ok
                assert ok == space.is_valid(p), (name, p, cuda_why_illegal(st, p))
        assert legal > 10


def test_layout_one_dynamic_array_no_barrier_only_one_plane_queues_in_registers() -> None:
    st = cstuner_stencil("hypterm", 32)
    k = generate_cuda(st, cuda_config("zq_fission"))
    per = cuda_zq_doubles(st, cuda_config("zq_fission"))
    assert k.shared == tuple(q * 32 * 2 * 8 for q in per) and len(k.shared) == len(k.kernels) == 3
    for body in k.source.split('extern "C"')[1:]:
        assert body.count("extern __shared__ __align__(16) unsigned char dsm[];") == 1
        assert "__shared__ double" not in body and "__syncthreads" not in body and "%" not in body
        assert not re.search(r"\bq\d+_1\b", body)  # every register queue left holds one plane
        offs = sorted({int(x) for x in re.findall(r"zq\[\w+ \+ (\d+)\]", body)})
        assert offs and offs[0] == 0 and all(o % 64 == 0 for o in offs)  # slabs of D x 64 elements, in order
    # hypterm's one kernel: 6 arrays x 9 planes, as Nsight's reading counted (54 doubles per thread)
    assert cuda_zq_doubles(cstuner_stencil("hypterm", 320), {**cuda_baseline(), **ZQ}) == (54,)


def test_cyclic_points_that_share_columns_share_their_queues() -> None:
    st = cstuner_stencil("j3d27pt", 32)  # 27 elements per point, 3x3 columns of 3 planes
    c = cuda_config("zq_merge")  # bmx=2, cmy=2 two rows apart: columns x -1..2 by y -1..3, 20 of 3 planes
    assert cuda_zq_doubles(st, c) == (60,) < (4 * 27,)
    far = {**c, "by": 8}  # the cyclic points 8 rows apart: two disjoint sets of 4 x 3 columns
    assert cuda_zq_doubles(st, far) == (2 * 36,)


# ---- compile (nvcc) and run on the CPU emulator --------------------------------------------------------
_compile = compile_case


@needs_nvcc
def test_zq_compiles_for_hypterm_and_j3d27pt_without_static_shared_memory() -> None:
    cases = [("hypterm", "zq"), ("j3d27pt", "zq_merge")]
    with ThreadPoolExecutor(2) as pool:
        builds = list(pool.map(lambda c: _compile(*c), cases))
    for bd in builds:
        assert bd.cubin[:4] == b"\x7fELF" and bd.smem_bytes == 0
        assert "warning" not in bd.log.lower()  # e.g. no unused slot index


@needs_nvcc
def test_zq_lets_hypterm_fit_128_registers_without_spills() -> None:
    """The point of zq (ptxas, sm_90, 320^3, 32x4, z-streamed sb=8): under a 128-register cap the
    register-queue kernel spills 672 bytes; with the queues in shared memory it does not spill."""
    st = cstuner_stencil("hypterm", 320)
    c = {**cuda_baseline(), "sd": "z", "sb": 8, "bx": 32, "by": 4, "maxrreg": 128}
    with ThreadPoolExecutor(2) as pool:
        builds = list(pool.map(lambda z: compile_cuda(generate_cuda(st, {**c, "zq": z}).source, arch="sm_90",
                                                      options=generate_cuda(st, {**c, "zq": z}).options),
                               (False, True)))
    regs, zq = builds
    assert regs.spill_stores > 0
    assert zq.registers is not None and zq.registers <= 128 and zq.spill_stores == 0 and zq.spill_loads == 0


@needs_nvcc
@pytest.mark.slow
@pytest.mark.parametrize("name", CSTUNER_STENCILS)
def test_zq_compiles_for_every_stencil(name: str) -> None:
    opts = [o for o in ZQ_OPTS if cuda_case_applies(o, cstuner_stencil(name, 32))]
    assert len(opts) >= 3
    with ThreadPoolExecutor(2) as pool:
        builds = list(pool.map(lambda o: _compile(name, o), opts))
    assert all(bd.cubin[:4] == b"\x7fELF" and bd.smem_bytes == 0 for bd in builds)


def _cpu_check(name: str, opt: str) -> None:
    check_case(name, opt)


@pytest.mark.parametrize("name,opt", [("j3d27pt", "zq_merge"), ("hypterm", "zq_cyclic_unroll")])
def test_zq_matches_numpy_on_the_cpu(name: str, opt: str) -> None:
    _cpu_check(name, opt)


def test_a_wrong_circular_buffer_is_caught_on_the_cpu() -> None:
    """The emulator check is not vacuous: wrapping the slot counter to the wrong slot gives wrong output."""
    if not cuda_on_cpu.gxx_available():
        pytest.skip("g++ not installed")
    st = cstuner_stencil("j3d7pt", 32)
    data = st.make_data(0)

    def wrong(s: Any, c: Any) -> Any:
        k = static_dsmem(generate_cuda(s, c))
        src = re.sub(r"(zo\d+) == (\d+) \? 0 :", r"\1 == \2 ? 128 :", k.source)
        assert src != k.source
        return replace(k, source=src)

    with mock.patch.object(cuda_on_cpu, "generate_cuda", wrong):
        out = cuda_on_cpu.run_on_cpu(st, cuda_config("zq"), data)
    assert not np.allclose(out["out"], st.reference(data)["out"])


@pytest.mark.slow
@pytest.mark.parametrize("name,opt", _cases())
def test_every_zq_kernel_matches_numpy_on_the_cpu(name: str, opt: str, parallel_cases: ParallelCases) -> None:
    parallel_cases.run("test_every_zq_kernel_matches_numpy_on_the_cpu", _cpu_check, name=name, opt=opt)


def test_zq_cases_are_in_the_shared_cases_for_every_stencil() -> None:
    assert set(ZQ_OPTS) <= set(CUDA_OPTS)
    for name in CSTUNER_STENCILS:
        assert {"zq", "zq_merge", "zq_cyclic_unroll"} <= {o for n, o in _cases() if n == name}


# ---- the runner's launch path, through CudaBackend.run with a stand-in driver ---------------------------
def test_runner_opts_in_and_passes_each_zq_kernels_dynamic_shared_memory(fake_gpu: Any) -> None:  # noqa: F811
    from apps.stencil.runner import CudaStencilRunner
    from measurement.cuda import CudaBuild

    be, drv = fake_gpu
    st = cstuner_stencil("hypterm", 32)
    runner = CudaStencilRunner(st, be, repeats=2, warmup=1)
    k = generate_cuda(st, cuda_config("zq_fission"))
    res = runner.measure((k, CudaBuild(b"\x7fELF", "sm_90")))
    sizes = dict(zip(k.kernels, k.shared))
    assert set(drv.attributes) == {(n, "MAX_DYNAMIC_SHARED_SIZE_BYTES", b) for n, b in sizes.items()}
    assert drv.launches == [(n, sizes[n]) for n in k.kernels] * 3
    assert res.metrics["dynamic_smem_bytes"] == max(k.shared)


# ---- zq with prefetch: the next plane copied (cp.async) into each queue's spare slot one step ahead ----------
ZQPF = {"sd": "z", "zq": True, "prefetch": True}

#: name -> (stencil, grid (nz, ny, nx), options over ``cuda_baseline()`` and ZQPF).  The z extents give chunks
#: (nz / sb planes a block streams) of odd length, shorter than the queue (hypterm: 9 planes) and of one
#: plane (every step is a chunk's last, where the copy must not reach past the chunk or the grid)
PF_CASES: dict[str, tuple[str, tuple[int, int, int], dict[str, Any]]] = {
    "j3d7pt_32x4_uf2": ("j3d7pt", (32, 32, 32), {"sb": 2, "uf": 2, "bx": 32, "by": 4}),
    "j3d7pt_chunk3": ("j3d7pt", (24, 32, 32), {"sb": 8, "bx": 32, "by": 4}),
    "j3d7pt_chunk1_merge": ("j3d7pt", (16, 32, 32), {"sb": 16, "bx": 16, "by": 2, "bmx": 2, "cmy": 2,
                                                     "stcs": True}),
    "j3d27pt_chunk5_cyclic": ("j3d27pt", (20, 32, 32), {"sb": 4, "bx": 16, "by": 2, "bmx": 2, "cmy": 2,
                                                        "coef": "constant"}),
    "helmholtz_chunk7": ("helmholtz", (28, 32, 32), {"sb": 4, "bx": 8, "by": 8, "cse": True}),
    "addsgd4_r2_chunk5": ("addsgd4", (20, 32, 32), {"sb": 4, "bx": 16, "by": 4, "bmx": 2}),
    "addsgd4_r2_fission_uf4": ("addsgd4", (32, 32, 32), {"sb": 2, "uf": 4, "fis": 3, "bx": 32, "by": 2,
                                                         "cse": True}),
    "addsgd6_r3_chunk9": ("addsgd6", (18, 32, 32), {"sb": 2, "bx": 32, "by": 1, "cmy": 2, "maxrreg": 168}),
    "hypterm_32x4_chunk3": ("hypterm", (12, 32, 32), {"sb": 4, "bx": 32, "by": 4, "maxrreg": 128}),
    "hypterm_chunk1_fission": ("hypterm", (8, 32, 32), {"sb": 8, "bx": 8, "by": 4, "cmx": 2, "coef": "literal",
                                                        "fis": 3}),
    "hypterm_uf2_minb": ("hypterm", (40, 32, 32), {"sb": 4, "uf": 2, "bx": 32, "by": 2, "minb": 4}),
    "rhs4center_r2_uf2": ("rhs4center", (12, 32, 32), {"sb": 2, "uf": 2, "bx": 32, "by": 2}),
}
#: the fast ones (radius 1, radius 2, high order); every case runs in the slow test and on the GPU
PF_FAST = ("j3d7pt_chunk3", "addsgd4_r2_chunk5", "hypterm_32x4_chunk3")


def _pf_case(case: str) -> tuple[Any, dict[str, Any]]:
    name, shape, opts = PF_CASES[case]
    return replace(cstuner_stencil(name, 32), shape=shape), {**cuda_baseline(), **ZQPF, **opts}


def _pf_opt_cases() -> list[tuple[str, str]]:
    """Every zq option set of the shared cases with prefetch on, where it fits (32^3)."""
    out = []
    for n in CSTUNER_STENCILS:
        st = cstuner_stencil(n, 32)
        out += [(n, o) for o in ZQ_OPTS if cuda_why_illegal(st, {**cuda_config(o), "prefetch": True}) is None]
    return out






@pytest.mark.parametrize("mode", ["deferred", "eager"])
@pytest.mark.parametrize("case", PF_FAST)
def test_zq_prefetch_matches_numpy_on_the_cpu(case: str, mode: str) -> None:
    st, c = _pf_case(case)
    assert cuda_why_illegal(st, c) is None
    cuda_on_cpu.assert_matches(st, cuda_on_cpu.emulate(st, c, mode), (case, mode))


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["deferred", "eager"])
@pytest.mark.parametrize("case", sorted(PF_CASES))
def test_every_zq_prefetch_case_matches_numpy_on_the_cpu(case: str, mode: str,
                                                         parallel_cases: ParallelCases) -> None:
    parallel_cases.run("test_every_zq_prefetch_case_matches_numpy_on_the_cpu", _pf_check, case=case, mode=mode)


def _pf_check(case: str, mode: str) -> None:
    st, c = _pf_case(case)
    assert cuda_why_illegal(st, c) is None
    cuda_on_cpu.assert_matches(st, cuda_on_cpu.emulate(st, c, mode), (case, mode))


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["deferred", "eager"])
@pytest.mark.parametrize("name,opt", _pf_opt_cases())
def test_every_zq_option_set_with_prefetch_matches_numpy_on_the_cpu(name: str, opt: str, mode: str,
                                                                    parallel_cases: ParallelCases) -> None:
    parallel_cases.run("test_every_zq_option_set_with_prefetch_matches_numpy_on_the_cpu", _pf_opt_check,
                       name=name, opt=opt, mode=mode)


def _pf_opt_check(name: str, opt: str, mode: str) -> None:
    st = cstuner_stencil(name, 32)
    cuda_on_cpu.assert_matches(st, cuda_on_cpu.emulate(st, {**cuda_config(opt), "prefetch": True}, mode), (name, opt, mode))


def test_zq_prefetch_cases_cover_the_chunk_edges() -> None:
    """The cases reach what the copy one step ahead must get right: chunks of one plane, of odd length and
    shorter than the deepest queue, radius 1, 2, 3 and 4, fission, merging and unrolling; all legal."""
    chunks, radii = set(), set()
    for case in PF_CASES:
        st, c = _pf_case(case)
        assert cuda_why_illegal(st, c) is None and cuda_space(st).is_valid(c), case
        ch = st.shape[0] // c["sb"]
        chunks.add(ch)
        radii.add(st.halo[0])
        if st.name == "hypterm":
            assert ch < 9 or c["uf"] > 1  # shorter than its 9-plane queues, or unrolled
    assert 1 in chunks and any(ch % 2 for ch in chunks if ch > 1) and radii == {1, 2, 3, 4}
    assert len(_pf_opt_cases()) >= 24


def test_zq_prefetch_layout_one_copy_per_queue_branch_free_spare_slot() -> None:
    """Per kernel: one ``zq_async`` per queue per step into the spare slot (t = D), one commit, the wait for
    the step before right after it, ``zq_wait_all`` after the loop, no ``if`` (a branch around the copies
    cost registers), no register prefetch (``n_q``), counters wrapping at D + 1 slots, bytes with the slot."""
    st = cstuner_stencil("hypterm", 32)
    c = {**cuda_config("zq_fission"), "prefetch": True}
    k = generate_cuda(st, c)
    per = cuda_zq_doubles(st, c)
    assert k.shared == tuple(q * 64 * 8 for q in per)
    assert k.source.count("#ifdef __CUDACC__") == 1 and "cp.async.wait_group 1" in k.source
    for body, q, q0 in zip(k.source.split('extern "C"')[1:], per, cuda_zq_doubles(st, {**c, "prefetch": False})):
        loop = body[body.index("for (int z"):]
        nq = len(set(re.findall(r"zq\[\w+ \+ (\d+)\]", body)))  # the slabs: one per queue
        assert nq and q == q0 + nq and loop.count("zq_async(") == nq and loop.count("zq_commit();") == 1
        assert loop.index("zq_commit();") < loop.index("zq_wait1();") < loop.index("=", loop.index("zq_wait1();"))
        assert "if (" not in loop and "__syncthreads" not in body and "%" not in body and "n_q" not in body
        assert body.count("zq_wait_all();") == 1 and body.index("zq_wait_all();") > body.rindex("  }\n  zq_wait")
        for d, wrap in re.findall(r"zo(\d+) = zo\d+ == (\d+) \? 0", body):
            assert int(wrap) == int(d) * 64  # slots 0 .. D: D + 1 of them
        spare = re.findall(r"zq_async\(&zq\[zi(\d+)_(\d+) \+ \d+\]", loop)
        assert spare and all(d == t for d, t in spare)
    # no other kernel names the helpers
    assert "zq_async" not in generate_cuda(st, cuda_config("zq_fission")).source
    assert "zq_async" not in generate_cuda(st, cuda_config("prefetch")).source


def _no_spare_slot(src: str) -> str:
    """D slots per queue instead of D + 1 (j3d7pt_chunk3: NT = 128): the copy of plane hi + 1 goes into the
    slot of plane lo, which this step still reads; right only if the copy lands after the compute."""
    src = re.sub(r"(const int zi\d+_\d+ = zo\d+ < )(\d+)( \? zo\d+ \+ \d+ : zo\d+ - )(\d+);",
                 lambda m: f"{m[1]}{int(m[2]) - 128}{m[3]}{int(m[4]) - 128};", src)
    return re.sub(r"(zo\d+ = zo\d+ == )(\d+)", lambda m: f"{m[1]}{int(m[2]) - 128}", src)


#: source rewrites that break the copy one step ahead: (edit, modes whose output is wrong, modes that abort)
BROKEN = {
    # the compute reads the plane before its copy has landed: only a late landing shows it
    "no wait": (lambda s: s.replace("    zq_wait1();", "    /* no wait */"), {"deferred"}, set()),
    # no spare slot: only an early landing shows it
    "no spare slot": (_no_spare_slot, {"eager"}, set()),
    # the copy into the slot of plane lo of this step: the wrong slot for the next one
    "wrong slot": (lambda s: re.sub(r"zq_async\(&zq\[zi(\d+)_\1 \+", r"zq_async(&zq[zo\1 +", s),
                   {"deferred", "eager"}, set()),
    # a chunk's last step copies plane hi + 1: past the grid in the last chunk
    "no clamp": (lambda s: re.sub(r"zn = z \+ 1 < \d+ \? (\d+) : 0;", r"zn = \1;", s), set(),
                 {"deferred", "eager"}),
    # the block ends with a copy in flight into its shared memory
    "no final wait": (lambda s: s.replace("  zq_wait_all();", "  /* no final wait */"), set(),
                      {"deferred", "eager"}),
}


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_broken_prefetch_is_caught_on_the_cpu(broken: str) -> None:
    """The emulator checks are not vacuous: each way of breaking the copy gives a wrong output or aborts in
    the landing mode that can see it, and the two modes see different faults (why both run)."""
    st, c = _pf_case("j3d7pt_chunk3")
    edit, wrong, aborts = BROKEN[broken]
    ref = st.reference(st.make_data(0))["out"]
    for m in ("deferred", "eager"):
        if m in aborts:
            with pytest.raises(RuntimeError, match="zq_async"):
                cuda_on_cpu.emulate(st, c, m, edit)
            continue
        out = cuda_on_cpu.emulate(st, c, m, edit)["out"]
        assert np.allclose(out, ref) == (m not in wrong), (broken, m)


@needs_nvcc
def test_zq_prefetch_compiles_without_static_shared_memory_or_warnings() -> None:
    cases = ["hypterm_chunk1_fission", "j3d27pt_chunk5_cyclic"]
    with ThreadPoolExecutor(2) as pool:
        builds = list(pool.map(lambda case: _pf_build(*_pf_case(case)), cases))
    for bd in builds:
        assert bd.cubin[:4] == b"\x7fELF" and bd.smem_bytes == 0 and "warning" not in bd.log.lower()


def _pf_build(st: Any, c: dict[str, Any]) -> Any:
    k = generate_cuda(st, c)
    return compile_cuda(k.source, arch="sm_90", options=k.options)


@needs_nvcc
def test_zq_prefetch_costs_hypterm_no_registers_under_128() -> None:
    """ptxas, sm_90, 320^3, 32x4, sb=8, maxrreg=128: the copies into the spare slots need no register, so
    zq with prefetch fits 128 like zq alone, without spills (an ``if`` around the copies spilled 140 B)."""
    st = cstuner_stencil("hypterm", 320)
    c = {**cuda_baseline(), "sd": "z", "sb": 8, "bx": 32, "by": 4, "maxrreg": 128, "zq": True}
    with ThreadPoolExecutor(2) as pool:
        zq, pf = pool.map(lambda p: _pf_build(st, {**c, "prefetch": p}), (False, True))
    assert pf.registers is not None and zq.registers is not None
    assert pf.registers <= 128 and pf.spill_stores == 0 and pf.spill_loads == 0
    assert pf.registers <= zq.registers + 2


@needs_nvcc
@pytest.mark.slow
def test_every_zq_prefetch_variant_compiles() -> None:
    variants = [(case, _pf_case(case)) for case in sorted(PF_CASES)]
    variants += [((n, o), (cstuner_stencil(n, 32), {**cuda_config(o), "prefetch": True})) for n, o in _pf_opt_cases()]
    with ThreadPoolExecutor(2) as pool:  # nvcc runs side by side (about a second each before it compiles)
        builds = list(pool.map(lambda v: _pf_build(*v[1]), variants))
    for (v, _), bd in zip(variants, builds):
        assert bd.cubin[:4] == b"\x7fELF" and bd.smem_bytes == 0 and "warning" not in bd.log.lower(), v


def test_runner_passes_the_prefetch_slot_in_the_dynamic_shared_memory(fake_gpu: Any) -> None:  # noqa: F811
    """The launch's bytes include the spare slots (the session-18 ncu fault was a launch without them)."""
    from apps.stencil.runner import CudaStencilRunner
    from measurement.cuda import CudaBuild

    be, drv = fake_gpu
    st = cstuner_stencil("hypterm", 32)
    runner = CudaStencilRunner(st, be, repeats=2, warmup=1)
    c = {**cuda_config("zq_fission"), "prefetch": True}
    k = generate_cuda(st, c)
    assert k.shared == tuple(q * 64 * 8 for q in cuda_zq_doubles(st, c))
    assert all(a > b for a, b in zip(k.shared, generate_cuda(st, cuda_config("zq_fission")).shared))
    res = runner.measure((k, CudaBuild(b"\x7fELF", "sm_90")))
    sizes = dict(zip(k.kernels, k.shared))
    assert set(drv.attributes) == {(n, "MAX_DYNAMIC_SHARED_SIZE_BYTES", b) for n, b in sizes.items()}
    assert drv.launches == [(n, sizes[n]) for n in k.kernels] * 3
    assert res.metrics["dynamic_smem_bytes"] == max(k.shared)


# ---- on the GPU ----------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def gpu_runners():  # type: ignore[no-untyped-def]
    return gpu_runners_or_skip()


@pytest.mark.cuda
@pytest.mark.parametrize("name,opt", _cases())
def test_zq_kernels_match_numpy_on_the_gpu(name: str, opt: str, gpu_runners) -> None:  # type: ignore[no-untyped-def]
    runner = gpu_runners[name]
    res = runner(cuda_config(opt))
    assert_matches_reference(runner, res)
    assert res.metrics["dynamic_smem_bytes"] > 0


@pytest.mark.cuda
@pytest.mark.parametrize("case", sorted(PF_CASES))
def test_zq_prefetch_cases_match_numpy_on_the_gpu(case: str, gpu_backend) -> None:  # type: ignore[no-untyped-def]
    from apps.stencil.runner import CudaStencilRunner

    st, c = _pf_case(case)
    runner = CudaStencilRunner(st, gpu_backend, repeats=1, warmup=0)
    res = runner(c)
    assert_matches_reference(runner, res)
    assert res.metrics["dynamic_smem_bytes"] == max(cuda_zq_doubles(st, c)) * c["bx"] * c["by"] * st.itemsize


@pytest.mark.cuda
@pytest.mark.parametrize("name,opt", _pf_opt_cases())
def test_zq_option_sets_with_prefetch_match_numpy_on_the_gpu(name: str, opt: str, gpu_runners) -> None:  # type: ignore[no-untyped-def]
    runner = gpu_runners[name]
    res = runner({**cuda_config(opt), "prefetch": True})
    assert_matches_reference(runner, res)
    assert res.metrics["dynamic_smem_bytes"] > 0
