"""``zqs``: the current plane's in-plane tiles in shared memory, copied with ``cp.async`` one plane ahead (issue 17).

With ``zq`` and ``prefetch`` the z-queues live in dynamic shared memory and
their next plane is copied a step ahead; the columns of one plane (hypterm:
96 of its 102 loads per step) were still loaded from global memory in their
own step.  ``zqs`` stages them: each (array, plane) that has such columns
gets a tile (block tile plus the x/y halo) in two buffers after the queues'
slabs; step z computes from one while the next step's plane is copied into
the other.  Here, without a GPU: the rules and their reasons, the space (its
expressions against the generator's count on every merge pattern, the
counts without ``zqs`` unchanged), the sources of every existing
configuration unchanged, the layout, the kernels on the CPU emulator against
NumPy with the copies landing late and early, broken kernels caught, and
nvcc builds (marker ``cuda``).  On a GPU (marker ``cuda``): every case
against NumPy.

``zqsn`` (session 22, second helper): only the ``zqsn`` tiles with the most
one-plane columns are staged (hypterm 32x4: 2 of 7, so that 3 blocks of
76,800 B share an SM); the same checks for it, and every ``zqs`` source of
before ``zqsn`` pinned.
"""

from __future__ import annotations

import hashlib
import itertools
import re
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import numpy as np
import pytest

from apps.stencil.cstuner import CSTUNER_STENCILS, cstuner_stencil
from apps.stencil.cuda_gen import (
    DSMEM_LIMIT,
    _queue_columns,
    _thread_points,
    _tile_points,
    _tiles_of,
    cuda_baseline,
    cuda_space_rules,
    cuda_why_illegal,
    cuda_zq_doubles,
    cuda_zqs_tiles,
    generate_cuda,
)
from apps.stencil.space import cuda_space
from measurement.cuda import compile_cuda, nvcc_available
from tests.apps import cuda_on_cpu
from tests.apps.stencil_cases import (
    ParallelCases,
    assert_matches_reference,
    count_space,
    cuda_config,
)

needs_nvcc = pytest.mark.skipif(not nvcc_available(), reason="nvcc not installed")
ZQS = {"sd": "z", "zq": True, "prefetch": True, "zqs": True}

#: name -> (stencil, grid (nz, ny, nx), options over ``cuda_baseline()`` and ZQS): radius 1 to 4, chunks of one
#: plane, of odd length and shorter than the queues, merging, fission, unrolling, a tile NT does not divide
CASES: dict[str, tuple[str, tuple[int, int, int], dict[str, Any]]] = {
    "j3d7pt_32x4_chunk3": ("j3d7pt", (24, 32, 32), {"sb": 8, "bx": 32, "by": 4}),
    "j3d7pt_chunk1_merge": ("j3d7pt", (16, 32, 32), {"sb": 16, "bx": 16, "by": 2, "bmx": 2, "cmy": 2,
                                                     "stcs": True}),
    "helmholtz_chunk7_cse": ("helmholtz", (28, 32, 32), {"sb": 4, "bx": 8, "by": 8, "cse": True}),
    "cheby_uf2_constant": ("cheby", (32, 32, 32), {"sb": 2, "uf": 2, "bx": 32, "by": 2, "coef": "constant"}),
    "addsgd4_r2_chunk5": ("addsgd4", (20, 32, 32), {"sb": 4, "bx": 16, "by": 4, "bmx": 2}),
    "addsgd4_r2_fission_uf4": ("addsgd4", (32, 32, 32), {"sb": 2, "uf": 4, "fis": 3, "bx": 32, "by": 2,
                                                         "cse": True}),
    "addsgd6_r3_chunk9": ("addsgd6", (18, 32, 32), {"sb": 2, "bx": 32, "by": 1, "cmy": 2, "maxrreg": 168}),
    "hypterm_32x4_chunk3": ("hypterm", (12, 32, 32), {"sb": 4, "bx": 32, "by": 4, "maxrreg": 168}),
    "hypterm_chunk1_fission": ("hypterm", (8, 32, 32), {"sb": 8, "bx": 8, "by": 4, "cmx": 2, "coef": "literal",
                                                        "fis": 3}),
    "hypterm_uf2_minb": ("hypterm", (40, 32, 32), {"sb": 4, "uf": 2, "bx": 32, "by": 2, "minb": 4}),
    "rhs4center_r2_uf2": ("rhs4center", (12, 32, 32), {"sb": 2, "uf": 2, "bx": 32, "by": 2}),
    "rhs4center_r2_fission": ("rhs4center", (20, 32, 32), {"sb": 4, "fis": 3, "bx": 16, "by": 4}),
}
#: the fast ones (radius 1, 2 and 4); every case runs in the slow test and on the GPU
FAST = ("j3d7pt_32x4_chunk3", "addsgd4_r2_chunk5", "hypterm_32x4_chunk3")


#: ``zqsn`` cases: a case of CASES and the count (below the most tiles of its kernels)
CASES_N: dict[str, tuple[str, int]] = {
    "hypterm_32x4_chunk3_n2": ("hypterm_32x4_chunk3", 2),
    "addsgd4_r2_chunk5_n1": ("addsgd4_r2_chunk5", 1),
    "hypterm_chunk1_fission_n3": ("hypterm_chunk1_fission", 3),
    "addsgd6_r3_chunk9_n4": ("addsgd6_r3_chunk9", 4),
    "rhs4center_r2_fission_n1": ("rhs4center_r2_fission", 1),
    "helmholtz_chunk7_cse_n1": ("helmholtz_chunk7_cse", 1),
}
FAST_N = ("hypterm_32x4_chunk3_n2", "addsgd4_r2_chunk5_n1")


def _case(case: str) -> tuple[Any, dict[str, Any]]:
    if case in CASES_N:
        base, n = CASES_N[case]
        st, c = _case(base)
        return st, {**c, "zqsn": n}
    name, shape, opts = CASES[case]
    return replace(cstuner_stencil(name, 32), shape=shape), {**cuda_baseline(), **ZQS, **opts}


# ---- rules and space ---------------------------------------------------------------------------------------
def test_zqs_needs_zq_with_prefetch_and_something_to_stage() -> None:
    st = cstuner_stencil("hypterm", 64)
    b = {**cuda_baseline(), "sd": "z", "sb": 2, "bx": 32, "by": 4}
    bad = [("needs zq with prefetch", {**b, "zqs": True}),
           ("needs zq with prefetch", {**b, "zqs": True, "zq": True}),
           ("needs zq with prefetch", {**b, "zqs": True, "prefetch": True}),
           ("needs zq with prefetch", {**b, "zqs": True, "prefetch": True, "smem": True}),
           ("needs streaming", {**cuda_baseline(), "zqs": True, "zq": True, "prefetch": True})]
    for why, c in bad:
        assert why in str(cuda_why_illegal(st, c)), (why, cuda_why_illegal(st, c))
        assert not cuda_space(st).is_valid(c)
        with pytest.raises(ValueError, match="illegal"):
            generate_cuda(st, c)
    ok = {**b, **ZQS}
    assert cuda_why_illegal(st, ok) is None and cuda_space(st).is_valid(ok)
    # 6 queues x 10 slots x 128 threads, then 7 arrays' tiles of (32 + 8) x (4 + 8) points, two buffers each
    assert cuda_zqs_tiles(st, ok) == (7,) and _tile_points(st, ok) == 480
    assert generate_cuda(st, ok).shared == (60 * 128 * 8 + 7 * 2 * 480 * 8,) == (115_200,)
    big = {**ok, "bx": 64}  # 122,880 B of queues + 7 x 2 x 72 x 12 x 8 B = 219,648 B: fits; 64x8 does not
    assert cuda_why_illegal(st, big) is None and cuda_space(st).is_valid(big)
    wide = {**big, "by": 8}
    assert "bytes of shared memory per block > 232448" in str(cuda_why_illegal(st, wide))
    assert not cuda_space(st).is_valid(wide)
    assert cuda_why_illegal(st, {**wide, "zqs": False}) is not None  # the queues alone are too large there


def test_j3d27pt_has_nothing_to_stage() -> None:
    """Every in-plane neighbour of j3d27pt is read on three planes, so its columns are all z-queues."""
    st = cstuner_stencil("j3d27pt", 64)
    c = {**cuda_baseline(), **ZQS, "sb": 2, "bx": 32, "by": 4}
    assert cuda_zqs_tiles(st, c) == (0,)
    assert "nothing to stage" in str(cuda_why_illegal(st, c)) and not cuda_space(st).is_valid(c)
    assert cuda_why_illegal(st, {**c, "zqs": False}) is None


def test_a_configuration_without_the_zqs_key_is_the_same_as_zqs_off() -> None:
    st = cstuner_stencil("hypterm", 32)
    c = {**cuda_config("zq"), "prefetch": True}
    old = {k: v for k, v in c.items() if k != "zqs"}
    assert cuda_why_illegal(st, old) is None and cuda_space(st).is_valid({**old, "zqs": False})
    assert generate_cuda(st, old) == generate_cuda(st, c)
    assert "zqs" not in generate_cuda(st, c).source.split("\n")[0]
    assert "'zqs': True" in generate_cuda(st, {**c, "zqs": True}).source.split("\n")[0]


#: sha256[:16] of zq + prefetch sources before ``zqs`` existed (commit 7337e14); every other pinned source
#: (test_stencil_cuda_zq.py) is checked there, and all 334 option sets x stencils of ``CUDA_OPTS`` with and
#: without prefetch were compared before and after when zqs was added
PF_BEFORE = {("hypterm", "zq"): "a9164459dc342801", ("j3d27pt", "zq_merge"): "a090dc61d5871428",
             ("rhs4center", "zq_fission"): "f7cfcb59cf05feca", ("j3d7pt", "zq_cyclic_unroll"): "e6433fdae9b7312b",
             ("addsgd6", "zq"): "7cac4663c8d9cc47", ("helmholtz", "zq_merge"): "39a8ba7e337ad268"}


def test_zq_prefetch_sources_are_byte_identical_to_before_zqs() -> None:
    for (name, opt), digest in PF_BEFORE.items():
        k = generate_cuda(cstuner_stencil(name, 32), {**cuda_config(opt), "prefetch": True})
        assert hashlib.sha256(k.source.encode()).hexdigest()[:16] == digest, (name, opt)
        assert "zt[" not in k.source and "__syncthreads" not in k.source


#: cuda_space(st).count_valid() at 64^3 before ``zqs`` existed (commit 7337e14)
COUNTS_BEFORE = {"j3d7pt": 17_964_636, "hypterm": 62_703_516, "addsgd6": 36_926_892, "rhs4center": 38_031_468}


_count = count_space  # cached for the session: the zq, dsmem, stage and transforms tests share counts


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n != "j3d7pt" else [])
                                  for n in COUNTS_BEFORE])
def test_space_counts_are_unchanged_without_zqs_and_grow_only_with_zq_and_prefetch(name: str) -> None:
    st = cstuner_stencil(name, 64)
    assert _count(st, "not zqs") == COUNTS_BEFORE[name]
    assert _count(st, "zqs and not (zq and prefetch)") == 0
    with_zqs = _count(st, "zqs and zqsn == 0")  # zqsn: test_space_counts_are_unchanged_without_zqsn
    assert 0 < with_zqs <= _count(st, "zq and prefetch and not zqs")
    assert _count(st, "zqsn == 0") == COUNTS_BEFORE[name] + with_zqs


def _rules(st: Any) -> list[Any]:
    return [compile(e, n, "eval") for e, n in cuda_space_rules(st) if n.startswith("staged tiles")]


@pytest.mark.parametrize("name", ["hypterm", "addsgd4", "j3d7pt", "j3d27pt",
                                  pytest.param("rhs4center", marks=pytest.mark.slow)])
def test_space_rules_say_exactly_which_blocks_fit(name: str) -> None:
    """The space's expressions (decision trees over the merge pattern) against the generator's count of queue
    elements and tiles, on every merge pattern, block shape and fission; the rule's bytes use the largest
    queue count and the largest tile count over the kernels, as ``cuda_why_illegal`` does."""
    st = cstuner_stencil(name, 64)
    rules = _rules(st)
    pow2 = [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    merges = [m for m in itertools.product((1, 2, 4), repeat=4) if np.prod(m) <= 8]
    n = fits = fits_n = 0
    for fis in range(1, len(st.outputs) + 1):
        for (bmx, bmy, cmx, cmy), bx, by in itertools.product(merges, pow2, pow2):
            if not 32 <= bx * by <= 1024:
                continue
            c = {"bx": bx, "by": by, "bz": 1, "bmx": bmx, "bmy": bmy, "bmz": 1, "cmx": cmx, "cmy": cmy, "cmz": 1,
                 "fis": fis, "zq": True, "prefetch": True, "zqs": True, "zqsn": 0}
            per, every = cuda_zq_doubles(st, c), max(cuda_zqs_tiles(st, c))
            for zqsn in (0, 1, 2, 3, 4):  # zqsn: fewer than every tile, the staged ones' bytes
                c["zqsn"] = zqsn
                tiles = cuda_zqs_tiles(st, c)
                assert max(tiles) == (min(every, zqsn) if zqsn else every)
                need = (max(per) * bx * by + 2 * max(tiles) * _tile_points(st, c)) * st.itemsize
                ok = every > 0 and (zqsn == 0 or zqsn < every) and need <= DSMEM_LIMIT
                assert all(eval(r, {"min": min}, c) for r in rules) == ok, (name, c, per, tiles)
                n += 1
                fits += ok
                fits_n += ok and zqsn > 0
    assert n > 5000
    assert (fits > 0) == (name != "j3d27pt")
    assert (fits_n > 0) == (name not in ("j3d27pt", "j3d7pt"))  # j3d7pt: one tile, nothing to leave out


def test_zqs_rules_match_the_space_on_random_points_near_zqs() -> None:
    """Random legal points with zq, prefetch and zqs switched on, then one parameter changed: generator == space."""
    from apps.stencil.cuda_gen import CUDA_PARAMS, OPT_IN_PARAMS

    for name in ("hypterm", "addsgd6", "j3d7pt"):
        st = cstuner_stencil(name, 64)
        space = cuda_space(st, opt_in=OPT_IN_PARAMS)  # the generator knows every parameter
        rng = np.random.default_rng(7)
        legal = 0
        for c in space.sample(rng, 60):
            c = {**c, "sd": "z", "bz": 1, "bmz": 1, "cmz": 1, "smem": False, "ring": False, "dsmem": False,
                 "retime": False, **ZQS, "zqsn": int(rng.integers(0, 4))}
            k = list(CUDA_PARAMS)[rng.integers(len(CUDA_PARAMS))]
            for p in (c, {**c, k: CUDA_PARAMS[k][rng.integers(len(CUDA_PARAMS[k]))]}):
                ok = cuda_why_illegal(st, p) is None
                legal += ok
                assert ok == space.is_valid(p), (name, p, cuda_why_illegal(st, p))
        assert legal > 10


def test_space_samples_zqs_configurations_that_generate() -> None:
    st = cstuner_stencil("hypterm", 320)
    s = cuda_space(st)
    s.require("zqs", name="staged tiles only")
    got = s.sample(np.random.default_rng(3), 30)
    assert got and all(cuda_why_illegal(st, c) is None for c in got)
    for c in got[:4]:
        k = generate_cuda(st, c)
        assert 0 < k.dynamic_smem <= DSMEM_LIMIT and len(k.shared) == c["fis"]


# ---- zqsn: fewer tiles ---------------------------------------------------------------------------------------
def test_zqsn_rules_and_bytes_hypterm_32x4_keeps_three_blocks_per_sm() -> None:
    st = cstuner_stencil("hypterm", 320)
    ok = {**cuda_baseline(), **ZQS, "sb": 8, "bx": 32, "by": 4, "maxrreg": 168}
    assert "zqsn (how many in-plane tiles zqs stages) needs zqs" in str(cuda_why_illegal(st, {**ok, "zqs": False,
                                                                                               "zqsn": 2}))
    assert not cuda_space(st).is_valid({**ok, "zqs": False, "zqsn": 2})
    queues = generate_cuda(st, {**ok, "zqs": False}).shared[0]
    assert queues == 61_440 and cuda_zqs_tiles(st, ok) == (7,)
    for n, tiles, shared in ((0, 7, 115_200), (1, 1, 69_120), (2, 2, 76_800), (3, 3, 84_480), (4, 4, 92_160)):
        c = {**ok, "zqsn": n}
        assert cuda_why_illegal(st, c) is None and cuda_space(st).is_valid(c), n
        assert cuda_zqs_tiles(st, c) == (tiles,)
        assert generate_cuda(st, c).shared == (queues + 2 * tiles * 480 * 8,) == (shared,)
        # H100: 228 KiB of shared memory per SM, 1 KiB of it reserved per block; 3 x 128 x 168 registers fit
        assert (3 * (shared + 1024) <= 228 * 1024) == (n in (1, 2)), n
    # rhs4center has 4 tiles: zqsn=4 would stage them all, which is zqsn=0
    rc = cstuner_stencil("rhs4center", 320)
    c = {**ok, "zqsn": 4}
    assert "every tile is staged: use zqsn=0" in str(cuda_why_illegal(rc, c)) and not cuda_space(rc).is_valid(c)
    assert cuda_why_illegal(rc, {**c, "zqsn": 3}) is None
    # j3d7pt has one tile
    j = cstuner_stencil("j3d7pt", 64)
    c = {**cuda_baseline(), **ZQS, "sb": 2, "bx": 32, "by": 4, "zqsn": 1}
    assert "use zqsn=0" in str(cuda_why_illegal(j, c)) and not cuda_space(j).is_valid(c)


def test_zqsn_stages_the_tiles_with_the_most_in_plane_loads() -> None:
    """The order comes from the stencil's columns (loads per thread and step a tile replaces), ties by name."""
    want = {("hypterm", 2): [("cons_e", 0), ("cons_imx", 0)],  # 16 columns each for 5 arrays, q_u and q_v 8
            ("hypterm", 6): [("cons_e", 0), ("cons_imx", 0), ("cons_imy", 0), ("cons_imz", 0), ("q_p", 0),
                             ("q_u", 0)],
            ("rhs4center", 1): [("u0", 0)],  # u0, u1: 20 columns; la, mu: 8
            ("rhs4center", 3): [("la", 0), ("u0", 0), ("u1", 0)],
            ("addsgd6", 1): [("u0", 0)],  # six arrays with 12, rho with 6
            ("helmholtz", 2): [("beta_i", 0), ("x", 0)]}  # x: 4 columns, beta_i and beta_j 2
    for (name, n), tiles in want.items():
        st = cstuner_stencil(name, 64)
        cols = _queue_columns(st, _thread_points({**cuda_baseline(), "bx": 32, "by": 4}))
        every = _tiles_of(st, cols)
        got = _tiles_of(st, cols, n)
        assert got == tiles, (name, n, got)
        loads = {t: sum(1 for k, (lo, hi) in cols.items() if lo == hi and (k[0], lo) == t) for t in every}
        assert min(loads[t] for t in got) >= max(loads[t] for t in every if t not in got)
        assert _tiles_of(st, cols, len(every)) == _tiles_of(st, cols, 0) == every


def test_zqsn_reads_staged_tiles_from_shared_memory_and_the_rest_from_global() -> None:
    st, c = _case("hypterm_32x4_chunk3_n2")
    k = generate_cuda(st, c)
    loop = k.source[k.source.index("for (int z"):]
    every = generate_cuda(st, {**c, "zqsn": 0}).source
    pf = generate_cuda(st, {**c, "zqs": False, "zqsn": 0}).source
    tp = _tile_points(st, c)
    # two tiles' copies: 4 elements per thread each (480 points, 128 threads) in the loop
    assert loop.count("zq_async(") == pf[pf.index("for (int z"):].count("zq_async(") + 2 * 4
    for arr in ("cons_e", "cons_imx"):
        assert f"__ldg(p_{arr} +" not in loop
        assert f"p_{arr} + (zn + 0 + tg0)" in loop
    for arr in ("cons_imy", "cons_imz", "q_p", "q_u", "q_v"):  # as zq + prefetch has them: loads in their step
        assert loop.count(f"__ldg(p_{arr} +") == pf[pf.index("for (int z"):].count(f"__ldg(p_{arr} +") > 0
        assert f"p_{arr} + (zn + 0 + tg0)" not in loop
    assert k.source.count("__syncthreads();") == 1 and f"zb = {tp} - zb;" in loop
    assert "'zqsn': 2" in k.source.split("\n")[0] and "zqsn" not in every.split("\n")[0]


#: sha256[:16] of every zqs case's source before ``zqsn`` existed (commit efbe589); the 371 sources of
#: CUDA_OPTS x stencils x (prefetch, zqs) and these cases were compared before and after when zqsn was added
ZQS_BEFORE = {"j3d7pt_32x4_chunk3": "aa5ad00c57877464", "j3d7pt_chunk1_merge": "c606ee91c30d7533",
              "helmholtz_chunk7_cse": "ff1539a60ffaaba7", "cheby_uf2_constant": "54d9022283aab404",
              "addsgd4_r2_chunk5": "546c69fc6d6e21da", "addsgd4_r2_fission_uf4": "330939a354cb7342",
              "addsgd6_r3_chunk9": "f96cb60346a154ae", "hypterm_32x4_chunk3": "165f068d10b9eb80",
              "hypterm_chunk1_fission": "fadd2675d1576c33", "hypterm_uf2_minb": "8e4e31441274471a",
              "rhs4center_r2_uf2": "0f61bd01eb192c05", "rhs4center_r2_fission": "fa8653bdee2bcc5c"}


def test_zqs_sources_are_byte_identical_to_before_zqsn() -> None:
    assert set(ZQS_BEFORE) == set(CASES)
    for case, digest in ZQS_BEFORE.items():
        st, c = _case(case)
        for cc in (c, {**c, "zqsn": 0}, {k: v for k, v in c.items() if k != "zqsn"}):
            assert hashlib.sha256(generate_cuda(st, cc).source.encode()).hexdigest()[:16] == digest, case


#: (total, with zqs) of cuda_space(st).count_valid() at 64^3 before ``zqsn`` existed (commit efbe589)
COUNTS_BEFORE_N = {"j3d7pt": (19_916_652, 1_952_016), "hypterm": (68_552_700, 5_849_184),
                   "addsgd6": (40_784_460, 3_857_568), "rhs4center": (40_790_268, 2_758_800)}


@pytest.mark.parametrize("name", [pytest.param(n, marks=[pytest.mark.slow] if n != "j3d7pt" else [])
                                  for n in COUNTS_BEFORE_N])
def test_space_counts_are_unchanged_without_zqsn(name: str) -> None:
    st = cstuner_stencil(name, 64)
    total, with_zqs = COUNTS_BEFORE_N[name]
    assert _count(st, "zqsn == 0") == total and _count(st, "zqs and zqsn == 0") == with_zqs
    assert _count(st, "zqsn > 0 and not zqs") == 0
    with_n = _count(st, "zqsn > 0")
    assert count_space(st) == total + with_n
    assert (with_n > 0) == (name != "j3d7pt")  # j3d7pt stages one tile: nothing to leave out


# ---- layout ----------------------------------------------------------------------------------------------
def test_layout_tiles_after_the_slabs_one_barrier_per_step_no_register_for_staged_columns() -> None:
    st, c = _case("hypterm_chunk1_fission")
    k = generate_cuda(st, c)
    pf = generate_cuda(st, {**c, "zqs": False})
    tiles = cuda_zqs_tiles(st, c)
    tp = _tile_points(st, c)
    assert k.shared == tuple(a + 2 * t * tp * 8 for a, t in zip(pf.shared, tiles))
    for body, body_pf, t in zip(k.source.split('extern "C"')[1:], pf.source.split('extern "C"')[1:], tiles):
        loop = body[body.index("for (int z"):body.rindex("  }\n  zq_wait_all();")]
        assert body.count("__syncthreads();") == 1 and loop.count("zq_wait_all();") == 1
        assert loop.index("zq_wait_all();") < loop.index("__syncthreads();") < loop.index("zq_async(")
        assert "zq_wait1" not in body and loop.count("zq_commit();") == 1
        assert body.count("zq_commit();") == 2  # the first step's tiles, then one group per step
        n_el = -(-tp // (c["bx"] * c["by"]))
        assert loop.count("zq_async(") == body_pf[body_pf.index("for (int z"):].count("zq_async(") + t * n_el
        assert f"zb = {tp} - zb;" in loop and re.search(rf"zq_async\(&zq\[{tp} - zb \+ \d+\]", loop)
        # every in-plane load of one plane is gone: the loop's global reads are the queues' copies
        assert "__ldg(p_" not in loop
        assert "__ldg(p_" in body_pf[body_pf.index("for (int z"):]
        assert re.findall(r"zt\[zb \+ -?\d+\]", loop)
        assert body.endswith("  }\n  zq_wait_all();  // the last step's copy lands before the block's shared memory is "
                             "released\n}\n")


# ---- the CPU emulator ------------------------------------------------------------------------------------




@pytest.mark.parametrize("mode", ["deferred", "eager"])
@pytest.mark.parametrize("case", FAST + FAST_N)
def test_zqs_matches_numpy_on_the_cpu(case: str, mode: str) -> None:
    st, c = _case(case)
    assert cuda_why_illegal(st, c) is None
    cuda_on_cpu.assert_matches(st, cuda_on_cpu.emulate(st, c, mode), (case, mode))


@pytest.mark.slow
@pytest.mark.parametrize("mode", ["deferred", "eager"])
@pytest.mark.parametrize("case", sorted(CASES) + sorted(CASES_N))
def test_every_zqs_case_matches_numpy_on_the_cpu(case: str, mode: str, parallel_cases: ParallelCases) -> None:
    parallel_cases.run("test_every_zqs_case_matches_numpy_on_the_cpu", _zqs_check, case=case, mode=mode)


def _zqs_check(case: str, mode: str) -> None:
    st, c = _case(case)
    assert cuda_why_illegal(st, c) is None
    cuda_on_cpu.assert_matches(st, cuda_on_cpu.emulate(st, c, mode), (case, mode))


def test_cases_cover_every_stencil_that_can_stage_and_the_chunk_edges() -> None:
    chunks, radii, names, tiles = set(), set(), set(), []
    for case in CASES:
        st, c = _case(case)
        assert cuda_why_illegal(st, c) is None and cuda_space(st).is_valid(c), case
        chunks.add(st.shape[0] // c["sb"])
        radii.add(st.halo[0])
        names.add(st.name)
        tiles.append(_tile_points(st, c) % (c["bx"] * c["by"]))
    assert 1 in chunks and any(ch % 2 for ch in chunks if ch > 1) and radii == {1, 2, 3, 4}
    assert names == set(CSTUNER_STENCILS) - {"j3d27pt"}
    assert any(tiles) and not all(tiles)  # a tile the threads divide and one they do not (the guarded copy)


#: source rewrites that break the staging: (edit, landing modes whose output is wrong)
BROKEN = {
    # the compute reads this step's tiles before the copies have landed: only a late landing shows it
    "no wait": (lambda s: s.replace("    zq_wait_all();  // this thread", "    /* no wait */  // this thread"),
                {"deferred"}),
    # the next plane copied into the buffer this step reads, not the other one
    "one buffer": (lambda s: re.sub(r"zq_async\(&zq\[(\d+) - zb \+", r"zq_async(&zq[zb +", s),
                   {"deferred", "eager"}),
    # the next step's copy takes this step's plane
    "wrong plane": (lambda s: re.sub(r"(p_\w+ \+ \()zn( \+ -?\d+ \+ tg\d+\))", r"\g<1>0\2", s),
                    {"deferred", "eager"}),
}


@pytest.mark.parametrize("broken", sorted(BROKEN))
def test_a_broken_staging_is_caught_on_the_cpu(broken: str) -> None:
    st, c = _case("j3d7pt_32x4_chunk3")
    edit, wrong = BROKEN[broken]
    ref = st.reference(st.make_data(0))["out"]
    for m in ("deferred", "eager"):
        out = cuda_on_cpu.emulate(st, c, m, edit)["out"]
        assert np.allclose(out, ref) == (m not in wrong), (broken, m)


# ---- nvcc (marker cuda: compile only, no GPU) -------------------------------------------------------------
def _build(st: Any, c: dict[str, Any]) -> Any:
    k = generate_cuda(st, c)
    return compile_cuda(k.source, arch="sm_90", options=k.options)


@pytest.mark.cuda
@needs_nvcc
@pytest.mark.parametrize("name", CSTUNER_STENCILS)
def test_zqs_compiles_for_every_stencil(name: str) -> None:
    """Every stencil's cases build without static shared memory or warnings (j3d27pt: refused, nothing to
    stage; its zq + prefetch kernel builds instead)."""
    cases = [_case(k) for k in CASES if CASES[k][0] == name]
    cases += [_case(k) for k in CASES_N if CASES[CASES_N[k][0]][0] == name]
    if name == "j3d27pt":
        st = cstuner_stencil(name, 32)
        c = {**cuda_baseline(), **ZQS, "sb": 2, "bx": 32, "by": 4}
        assert "nothing to stage" in str(cuda_why_illegal(st, c))
        cases = [(st, {**c, "zqs": False})]
    assert cases
    with ThreadPoolExecutor(2) as pool:
        builds = list(pool.map(lambda sc: _build(*sc), cases))
    for bd in builds:
        assert bd.cubin[:4] == b"\x7fELF" and bd.smem_bytes == 0 and "warning" not in bd.log.lower()


@pytest.mark.cuda
@needs_nvcc
def test_zqs_hypterm_at_320_builds_under_the_168_register_cap() -> None:
    """ptxas, sm_90, 320^3, 32x4, sb=8, maxrreg=168 (the shape of session 21's best zq + prefetch kernel), with the
    tiles: one kernel, the dynamic shared memory only (no static array)."""
    st = cstuner_stencil("hypterm", 320)
    c = {**cuda_baseline(), **ZQS, "sb": 8, "bx": 32, "by": 4, "maxrreg": 168}
    bd = _build(st, c)
    assert bd.registers is not None and bd.registers <= 168 and bd.smem_bytes == 0
    assert "zq_wait1" not in generate_cuda(st, c).source


@pytest.mark.cuda
@needs_nvcc
def test_zqsn_hypterm_at_320_builds_under_the_168_register_cap() -> None:
    """The probe's shapes (32x4 and 16x8, sb=8, maxrreg=168) with 1 and 2 tiles staged: within the cap, no static array."""
    st = cstuner_stencil("hypterm", 320)
    cs = [{**cuda_baseline(), **ZQS, "sb": 8, "bx": bx, "by": 128 // bx, "maxrreg": 168, "zqsn": n}
          for bx in (32, 16) for n in (1, 2)]
    with ThreadPoolExecutor(2) as pool:
        builds = list(pool.map(lambda c: _build(st, c), cs))
    for c, bd in zip(cs, builds):
        assert bd.registers is not None and bd.registers <= 168 and bd.smem_bytes == 0, c
        assert "warning" not in bd.log.lower()


# ---- on the GPU ------------------------------------------------------------------------------------------
@pytest.mark.cuda
@pytest.mark.parametrize("case", sorted(CASES) + sorted(CASES_N))
def test_zqs_cases_match_numpy_on_the_gpu(case: str, gpu_backend) -> None:  # type: ignore[no-untyped-def]
    from apps.stencil.runner import CudaStencilRunner

    st, c = _case(case)
    runner = CudaStencilRunner(st, gpu_backend, repeats=1, warmup=0)
    res = runner(c)
    assert_matches_reference(runner, res)
    assert res.metrics["dynamic_smem_bytes"] == max(generate_cuda(st, c).shared)
