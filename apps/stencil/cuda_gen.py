"""CUDA kernels with csTuner's optimisation set, generated from a ``Stencil``.

Why generated: csTuner (Sun et al., CLUSTER 2021, Sec. III and Table II)
tunes one stencil over a space of code transformations; each point of that
space is a different kernel.  The knobs here, with csTuner's constraints:

* ``bx, by, bz``: thread-block dims (powers of two, 32 <= product <= 1024);
* ``sd``: streaming dimension (``none`` or ``z``: each thread marches along z
  keeping a register queue of planes, 2.5-D blocking), ``sb`` concurrent
  streaming blocks along z (each handles nz/sb planes), ``uf`` unrolling of
  the streaming loop;
* ``bmx, bmy, bmz`` block merging (a thread computes consecutive points) and
  ``cmx, cmy, cmz`` cyclic merging (points a block-width apart);
* ``smem``: stage the new plane of every array read at in-plane neighbours in
  shared memory (streaming only);
* ``coef``: where the coefficients live: ``global`` (read through the
  read-only cache), ``constant`` (``__constant__`` memory, csTuner's choice)
  or ``literal`` (compiled in as numbers, so nvcc folds them: ours, the
  OpenCL generator's only choice);
* ``prefetch``: load the next plane before computing the current one;
* ``retime``: for stencils that are sums of single-plane terms (the
  high-order star stencils), scatter each loaded plane's contribution to the
  2r+1 outputs that need it (retiming, Rawat et al., PPoPP 2018), which keeps
  partial sums instead of a (2r+1)-deep queue of every column;
* ``minb`` (ours, not csTuner's): minimum resident blocks per SM in
  ``__launch_bounds__``, which caps registers per thread and trades spills
  for occupancy in the register-hungry high-order stencils (up to 32, as
  long as minb blocks fit in an SM's 2048 threads: small blocks of
  multi-point threads need a high minb to be capped at all);
* ``stcs`` (ours): write outputs with ``__stcs`` (cache-streaming,
  evict-first): an output is written once and never read back, so it need
  not displace the input planes whose reuse between z-neighbours the L2
  serves;
* ``dsmem`` (ours, with ``ring`` only): the ring buffers live in dynamic
  shared memory (one ``extern __shared__`` array, each ring at a 16-byte
  aligned offset) instead of static ``__shared__`` arrays, so they may grow
  past the 48 KiB a block gets without opt-in, up to ``DSMEM_LIMIT``.  Why:
  Nsight Compute on the high-order stencils (docs/STENCILS.md, issue 17)
  found them limited by 8 warps per SM at 254 registers, and the rings that
  would take the z-queues out of registers need more than 48 KiB for
  hypterm (any tile) and for 32- or 64-wide tiles of addsgd6 and
  rhs4center.  The launch must opt in (``CudaKernelSpec.shared``; the
  runner sets ``MAX_DYNAMIC_SHARED_SIZE_BYTES`` and passes the bytes).
* ``zq`` (ours, plain register-queue streaming only: ``sd='z'``, not with
  ``smem``, ``ring`` or ``retime``): every column queue of
  D >= 2 planes lives in dynamic shared memory instead of registers, a slab
  of D x NT elements per queue (NT threads per block) of which thread
  ``tid`` owns elements ``slot * NT + tid``, used as a circular buffer: one
  running slot counter per distinct D (``zo<D>``, wrapped with a compare),
  plane lo + t read at slot (counter + t) mod D, each step's new plane
  loaded from global memory into the oldest slot, no shifting copies and no
  barrier (no thread reads another's elements).  One-plane queues (in-plane
  neighbours) stay in registers.  Why: Nsight Compute (docs/STENCILS.md,
  issue 17) found hypterm's z-streamed kernel latency-bound at 8 warps per
  SM with 254 registers, 108 of them its 6 arrays x 9 planes of queue
  (54 doubles); in shared memory (110.6 KB for 256 threads) they should
  let it fit 128 registers (16 warps per SM) without spills and without new
  DRAM traffic (ptxas: 126 registers, no spills, with ``maxrreg=128``).
  Why not with ``smem``: the staged arrays' queues are per in-plane
  neighbour (a queue per column of the tile), which the ring buffers
  (``ring``, ``dsmem``) already keep in shared memory once per tile point;
  and mixing static tiles with dynamic queues would split the 227 KiB
  between two rules.  Rule: the queues of every fission group fit
  ``DSMEM_LIMIT`` and every group has one (``cuda_zq_doubles``); the
  bytes per kernel are ``CudaKernelSpec.shared``, launched as for ``dsmem``.
* ``zq`` with ``prefetch`` (ours): each z-queue gets one more slot (D + 1
  per queue, counted in ``cuda_zq_doubles`` and the launch's bytes), and
  while step z computes from planes lo..hi, the plane step z + 1 will need
  (hi + 1) is copied from global into that spare slot with ``cp.async``
  (sm_80+, ``zq_async``; no register holds the value), committed as one
  group per step and waited for (``cp.async.wait_group 1``) one step later,
  just before the compute that reads it; in a chunk's last step the copy
  takes plane hi again (branch-free: an ``if`` around the copies cost
  hypterm spills under 128 registers), so nothing past the chunk or the
  grid is read, and ``cp.async.wait_all`` follows the loop.  Why: Nsight Compute on
  hypterm's zq kernels (docs/STENCILS.md, issue 17, session 18) found them
  latency-bound at 12.5-18.8 % occupancy, waiting on global loads; the copy
  keeps the next plane's loads in flight through a whole step's compute at
  the register count of plain ``zq`` (the register ``prefetch`` of the
  plain kernel holds one register per queue, what zq removes).  Columns of
  one plane (in-plane neighbours) stay in registers, loaded in their step
  as with ``zq`` alone (hypterm: 96 such loads per step beside the 6 queue
  planes; a register each to prefetch them is what zq cannot afford).
* ``zqs`` (ours, with ``zq`` and ``prefetch`` only): the one-plane columns
  that zq leaves in registers, of the arrays read at in-plane neighbours,
  come from shared memory: for each (array, plane) with such columns, a
  tile of the block tile plus the stencil's x/y halo, two buffers of it
  after the queues' slabs in the same dynamic array.  While step z computes
  from buffer ``zb``, the next step's plane is copied into the other with
  ``cp.async`` (each thread elements tid, tid + NT, ..., the last row
  guarded where NT does not divide the tile), in the same commit group as
  the queues' copies; at the top of each step one ``cp.async.wait_all`` and
  one ``__syncthreads`` make every thread's copies visible and free the
  buffer the step before read (one barrier per step; ``zq_wait1`` is not
  used).  A chunk's last step copies its own plane again (the queues'
  branch-free clamp).  Columns on more than one plane stay z-queues, so
  j3d27pt (every in-plane neighbour on three planes) has nothing to stage
  and is refused.  Rule: queues (with the prefetch slot) plus 2 x tiles x
  tile points fit ``DSMEM_LIMIT``, with the most queue elements and the
  most tiles over the fission kernels (``cuda_zqs_tiles``; the space's
  expression is the same bound, ``_zqs_rule_counts``).  Why: Nsight Compute
  on hypterm's zq + prefetch kernel (docs/STENCILS.md, issue 17, session 21)
  found it latency-bound at 18.8 % occupancy with 96 of its 102 loads per
  step from global memory in their own step; the tiles put them one step
  ahead, at the cost of shared memory (hypterm 32x4: 115,200 B per block
  instead of 61,440, 2 blocks per SM instead of 3).
* ``zqsn`` (ours, with ``zqs`` only; 0 = every tile, as ``zqs`` alone): stage
  only the ``zqsn`` tiles of a kernel with the most one-plane columns (the
  in-plane loads per thread and step each tile replaces; ties in (array,
  plane) order); the other one-plane columns stay register loads in their
  own step as with zq + prefetch.  Double-buffered like ``zqs``: a single
  buffer could only be refilled after every thread's last read of it (a
  second barrier per step), so the copies would be in flight for the
  end-of-step only, not one plane ahead, which is what zqs is for; and
  single buffers of all seven hypterm tiles (26,880 B at 32x4) would still
  not let 3 blocks share an SM.  Rule: ``zqsn`` below the most tiles over
  the kernels (at or above it is ``zqsn=0``), and the queues plus 2 x
  min(tiles, zqsn) x tile points fit ``DSMEM_LIMIT``.  Why: hypterm 32x4
  (rr168) at 61,440 B + 2 x zqsn x 3,840 B keeps 3 blocks per SM (228 KiB,
  1 KiB reserved per block: 76,800 B each) with zqsn <= 2, which stages
  cons_e and cons_imx (32 of the 96 in-plane loads per step).

Arrays are padded (see ``apps.stencil.spec``), so no thread needs a bounds
check: the legality rules make every tile divide the grid exactly.

Addressing: every thread forms one 64-bit pointer per array (``p_in = in +
base``) and reads ``p_in[constant]``; a streaming thread advances its
pointers by one plane per step.  Each load and store then uses the
``[register + immediate]`` form of LDG/STG.  Indexing with ``in[base +
off]`` (int) instead made nvcc emit a separate 32-bit add and 64-bit
IMAD.WIDE per access, one 64-bit register pair per access in flight: the
one-point-per-thread j3d7pt kernel took 36 registers (75% occupancy on
sm_90) instead of 32 (22 with literal coefficients), and that baseline ran at
85.0% instead of 87.6% of the H100's copy bandwidth (docs/BENCHMARKS.md,
Table 2c).
"""

from __future__ import annotations

import functools
import itertools
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeVar

from apps.stencil.expr import Access, Bin, Coef, Const, Expr, Line, Neg, render
from apps.stencil.spec import Stencil

__all__ = [
    "CUDA_PARAMS",
    "DSMEM_LIMIT",
    "CudaKernelSpec",
    "cuda_baseline",
    "cuda_dynamic_smem",
    "cuda_is_legal",
    "cuda_retimable",
    "cuda_space_rules",
    "cuda_why_illegal",
    "cuda_zq_doubles",
    "cuda_zqs_tiles",
    "fission_groups",
    "generate_cuda",
]

_T = TypeVar("_T")

KERNEL_NAME = "stencil_kernel"
SMEM_LIMIT = 48 * 1024  # static shared memory per block (CUDA's limit without opt-in)
#: dynamic shared memory per block after opt-in on sm_90 (H100/H200): 227 KiB = 232,448 B, the CUDA C++
#: Programming Guide's "Maximum amount of shared memory per thread block" for compute capability 9.0
#: (cudaDevAttrMaxSharedMemoryPerBlockOptin; the H100 of docs/STENCILS.md reports 232,448).  The space's
#: bound for ``dsmem`` rings; a device that allows less (sm_80: 163 KiB) refuses at run time (runner).
DSMEM_LIMIT = 227 * 1024
DSMEM_ALIGN = 16  # bytes: each ring's offset in the dynamic array (16-byte vector loads stay legal)
MAX_THREADS_PER_SM = 2048  # sm_80/sm_90: minb blocks of the block size must fit on one SM

# name -> legal values (powers of two where the paper uses them)
CUDA_PARAMS: dict[str, list[Any]] = {
    "bx": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
    "by": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
    "bz": [1, 2, 4, 8, 16, 32, 64],
    "sd": ["none", "z"],
    "sb": [1, 2, 4, 8, 16, 32, 64],
    "uf": [1, 2, 4, 8],
    "bmx": [1, 2, 4], "bmy": [1, 2, 4], "bmz": [1, 2, 4],
    "cmx": [1, 2, 4], "cmy": [1, 2, 4], "cmz": [1, 2, 4],
    "smem": [False, True],
    "coef": ["global", "constant", "literal"],
    "prefetch": [False, True],
    "retime": [False, True],
    "minb": [1, 2, 4, 8, 16, 32],
    "stcs": [False, True],
    "maxrreg": [0, 32, 40, 48, 64, 80, 96, 128, 168],
    "fis": [1, 2, 3, 4, 5],
    "cse": [False, True],
    "ring": [False, True],
    "dsmem": [False, True],
    "zq": [False, True],
    "zqs": [False, True],
    "zqsn": [0, 1, 2, 3, 4],
    "l2pf": [0, 1, 2, 4],
}

#: parameters a configuration may leave out (added after configurations were stored): their default
OPTIONAL_PARAMS: dict[str, Any] = {"dsmem": False, "zq": False, "zqs": False, "zqsn": 0, "l2pf": 0}

#: parameters the space holds only when asked (``cuda_space(st, opt_in=...)``): built and tested, not yet shown to
#: help the search (docs/STENCILS.md, "Issue 17, session 27")
OPT_IN_PARAMS: tuple[str, ...] = ("l2pf",)

#: registers per SM (sm_80/sm_90): a -maxrregcount cap must let one block of the block size fit
REGS_PER_SM = 65536


def cuda_baseline(opt_in: Iterable[str] = ()) -> dict[str, Any]:
    """The untuned reference point: one point per thread, 32x4x1 blocks, global memory.

    ``opt_in``: the ``OPT_IN_PARAMS`` the space holds (``cuda_space(st, opt_in)``), added at their defaults,
    so that the baseline is a configuration of that space. Without them a search seeded with the baseline is
    refused by the space's key check (session 27: the benchmark then fell back to random sampling).
    """
    unknown = [p for p in opt_in if p not in OPT_IN_PARAMS]
    if unknown:
        raise ValueError(f"cuda_baseline(opt_in=...): {unknown} not among {OPT_IN_PARAMS}")
    return {"bx": 32, "by": 4, "bz": 1, "sd": "none", "sb": 1, "uf": 1, "bmx": 1, "bmy": 1, "bmz": 1,
            "cmx": 1, "cmy": 1, "cmz": 1, "smem": False, "coef": "global", "prefetch": False, "retime": False,
            "minb": 1, "stcs": False, "maxrreg": 0, "fis": 1, "cse": False,
            "ring": False, "dsmem": False, "zq": False, "zqs": False, "zqsn": 0,
            **{p: OPTIONAL_PARAMS[p] for p in opt_in}}


def cuda_retimable(st: Stencil) -> bool:
    """True when every output is a sum of terms that each read a single z-plane."""
    for _, e in st.outputs:
        for t in _terms(e):
            planes = {a.dz for a in _accs(t)} | {ln.d for ln in _lines(t) if ln.axis == 0}
            if len(planes) > 1:
                return False
    return True


def _staged_arrays(st: Stencil) -> list[str]:
    return list(_memo(st, ("staged",), lambda: sorted({a.array for a in st.all_accesses() if a.dx or a.dy})))


def _memo(st: Stencil, key: tuple[Any, ...], make: Callable[[], _T]) -> _T:
    """``make()``, computed once per stencil object and ``key``, kept on the (immutable) stencil.

    Why: the space's rule checks and counts call the per-kernel helpers
    (sub-stencils, their columns, staged tiles) once per configuration, tens
    of thousands of times for the same stencil; what they derive depends only
    on the stencil and the key.  Kept in the instance ``__dict__`` (past the
    frozen ``__setattr__``), not a field, so equality, hashing and ``repr``
    are unchanged.  Callers must not change what they get back.
    """
    memo = st.__dict__.setdefault("_cuda_memo", {})
    if key not in memo:
        memo[key] = make()
    return memo[key]


def _smem_bytes(st: Stencil, c: Mapping[str, Any]) -> int:
    tw = c["bx"] * c["bmx"] * c["cmx"] + 2 * st.halo[2]
    th = c["by"] * c["bmy"] * c["cmy"] + 2 * st.halo[1]
    return len(_staged_arrays(st)) * tw * th * st.itemsize


def cuda_why_illegal(st: Stencil, c: Mapping[str, Any]) -> str | None:
    """The first rule ``c`` breaks for stencil ``st``, or None when legal."""
    for k, vals in CUDA_PARAMS.items():
        if c.get(k, OPTIONAL_PARAMS.get(k)) not in vals:
            return f"{k}={c.get(k)!r} not in {vals}"
    dsmem = bool(c.get("dsmem", False))
    nz, ny, nx = st.shape
    threads = c["bx"] * c["by"] * c["bz"]
    if not 32 <= threads <= 1024:
        return f"bx*by*bz={threads} must be within [32, 1024]"
    if threads * c["minb"] > MAX_THREADS_PER_SM:
        return f"minb={c['minb']} blocks of {threads} threads exceed {MAX_THREADS_PER_SM} threads per SM"
    if c["maxrreg"]:
        if c["minb"] != 1:
            return "maxrreg needs minb=1 (nvcc ignores -maxrregcount for a kernel with launch bounds)"
        if threads * c["maxrreg"] > REGS_PER_SM:
            return f"maxrreg={c['maxrreg']} registers x {threads} threads exceed {REGS_PER_SM} per SM"
    if c["fis"] > len(st.outputs):
        return f"fis={c['fis']} kernels for {len(st.outputs)} output(s): use fis <= {len(st.outputs)}"
    if dsmem and not c["ring"]:
        return "dsmem (ring buffers in dynamic shared memory) needs ring"
    zq = bool(c.get("zq", False))
    if zq and c["sd"] != "z":
        return "zq (the z-queues in dynamic shared memory) needs streaming (sd='z')"
    if zq and (c["smem"] or c["ring"] or c["retime"]):
        return ("zq moves the column queues of the plain register-queue kernel: not with smem, ring or retime "
                "(for arrays read at in-plane neighbours use ring with dsmem)")
    if c.get("zqs", False) and not (zq and c["prefetch"]):
        return ("zqs (the current plane's in-plane tiles staged in shared memory with cp.async) needs zq with "
                "prefetch")
    if c.get("zqsn", 0) and not c.get("zqs", False):
        return "zqsn (how many in-plane tiles zqs stages) needs zqs"
    l2pf = c.get("l2pf", 0)
    if l2pf and (c["sd"] != "z" or c["ring"] or c["retime"]):
        return "l2pf (planes prefetched into L2 ahead of the stream) needs streaming (sd='z') without ring or retime"
    if l2pf and c["sb"] and l2pf >= nz // c["sb"]:
        return (f"l2pf={l2pf} planes ahead is not less than a chunk's {nz // c['sb']} planes (nz / sb): use a smaller "
                f"l2pf or fewer streaming blocks (sb)")
    if c["bmx"] * c["bmy"] * c["bmz"] * c["cmx"] * c["cmy"] * c["cmz"] > 8:
        return "merging factors multiply to more than 8 points per thread"
    if nx % (c["bx"] * c["bmx"] * c["cmx"]) or ny % (c["by"] * c["bmy"] * c["cmy"]):
        return "block tile does not divide the grid in x or y"
    if c["sd"] == "none":
        if c["sb"] != 1 or c["uf"] != 1 or c["smem"] or c["prefetch"] or c["retime"] or c["ring"]:
            return "sb, uf, smem, ring, prefetch and retime need streaming (sd='z')"
        if nz % (c["bz"] * c["bmz"] * c["cmz"]):
            return "block tile does not divide the grid in z"
    else:
        if c["bz"] != 1 or c["bmz"] != 1 or c["cmz"] != 1:
            return "streaming along z needs bz = bmz = cmz = 1"
        if nz % c["sb"] or (nz // c["sb"]) % c["uf"]:
            return "nz must split into sb chunks whose length uf divides"
        if c["smem"] and not dsmem and _smem_bytes(st, c) > SMEM_LIMIT:
            return f"shared-memory tiles need {_smem_bytes(st, c)} bytes > {SMEM_LIMIT}"
        if c["retime"] and (c["smem"] or c["prefetch"] or not cuda_retimable(st)):
            return "retime applies to retimable stencils without smem or prefetch"
        if c["retime"] and c["cse"]:
            return "cse does not apply to retimed kernels (each term group is rendered once)"
        if c["ring"] and (not c["smem"] or c["prefetch"] or c["retime"]):
            return "ring (shared-memory ring buffer of planes) needs smem, without prefetch or retime"
        limit = DSMEM_LIMIT if dsmem else SMEM_LIMIT
        if c["ring"] and _ring_bytes(st, c) > limit:
            return f"ring buffers need {_ring_bytes(st, c)} bytes of shared memory > {limit}"
        if zq:
            per = cuda_zq_doubles(st, c)
            if min(per) == 0:
                return (f"zq: kernel {per.index(0)} has no z-queue of two or more planes to move to shared memory; "
                        "use zq=False")
            need = max(per) * threads * st.itemsize
            if need > DSMEM_LIMIT:
                return (f"z-queues need {need} bytes of shared memory per block > {DSMEM_LIMIT}: use fewer threads, "
                        "fewer merged points or fission (fis)")
            if c.get("zqs", False):
                tiles = max(cuda_zqs_tiles(st, {**c, "zqsn": 0}))  # every tile (zqsn: the most staged)
                if tiles == 0:
                    return ("zqs: no array is read at in-plane neighbours in one-plane columns (each such column "
                            "is a z-queue of zq): nothing to stage; use zqs=False")
                if c.get("zqsn", 0) and c["zqsn"] >= tiles:
                    return (f"zqsn={c['zqsn']}: the kernels have at most {tiles} tiles to stage, so every tile is "
                            "staged: use zqsn=0")
                if c.get("zqsn", 0):
                    tiles = c["zqsn"]
                need += 2 * tiles * _tile_points(st, c) * st.itemsize
                if need > DSMEM_LIMIT:
                    return (f"zqs: z-queues and {tiles} double-buffered tiles need {need} bytes of shared memory "
                            f"per block > {DSMEM_LIMIT}: use fewer threads, a smaller tile or fission (fis)")
    return None


def cuda_is_legal(st: Stencil, c: Mapping[str, Any]) -> bool:
    return cuda_why_illegal(st, c) is None


def cuda_space_rules(st: Stencil, opt_in: Iterable[str] = ()) -> list[tuple[str, str]]:
    """(expression, name) rules of the register-control and fission parameters, for ``cuda_space``.

    Kept here, beside ``cuda_why_illegal``, so that the parameters' two
    statements of the rules are written side by side. ``opt_in``: the
    ``OPT_IN_PARAMS`` the space holds, whose rules are added too.
    """
    rules = [("maxrreg == 0 or minb == 1", "maxrreg without launch bounds"),
             (f"maxrreg == 0 or bx * by * bz * maxrreg <= {REGS_PER_SM}", "register cap fits one block"),
             (f"fis <= {len(st.outputs)}", "fission kernels <= outputs"),
             ("not (retime and cse)", "cse not with retiming"),
             ("not ring or (sd == 'z' and smem and not prefetch and not retime)", "ring buffer: smem streaming"),
             ("not dsmem or ring", "dynamic shared memory only for ring buffers"),
             ("not zq or (sd == 'z' and not smem and not ring and not retime)",
              "z-queues in shared memory: plain register-queue streaming"),
             (f"not zq or bx * by * bz <= {_zq_rule_threads(st)}",
              "z-queues fit dynamic shared memory, every kernel has one"),
             (f"not zq or not prefetch or bx * by * bz <= {_zq_rule_threads(st, 1)}",
              "z-queues with their prefetch slot fit dynamic shared memory")]
    elements, tiles = _zqs_rule_counts(st)
    tile_pts = f"(bx * bmx * cmx + {2 * st.halo[2]}) * (by * bmy * cmy + {2 * st.halo[1]})"
    rules += [("not zqs or (zq and prefetch)", "staged tiles (zqs): zq with prefetch"),
              (f"not zqs or ({tiles}) >= 1", "staged tiles (zqs): a one-plane in-plane column to stage"),
              (f"zqsn == 0 or (zqs and zqsn < ({tiles}))", "staged tiles (zqsn): fewer than every tile, with zqs")]
    if tiles != "0":  # j3d27pt: every in-plane column is a z-queue, zqs is off by the rule above
        size = (f"({elements}) * bx * by * bz * {st.itemsize} + 2 * (zqsn if zqsn else ({tiles})) * {tile_pts} * "
                f"{st.itemsize} <= {DSMEM_LIMIT}")
        rules.append((f"not zqs or {size}", "staged tiles (zqs) and z-queues fit dynamic shared memory"))
    tile = f"(bx * bmx * cmx + {2 * st.halo[2]}) * (by * bmy * cmy + {2 * st.halo[1]})"
    for k in range(1, len(st.outputs) + 1):
        size = f"{tile} * {_ring_bytes_per_point(st, k)}"
        rules.append((f"not ring or fis != {k} or {size} <= {SMEM_LIMIT} or (dsmem and {size} <= {DSMEM_LIMIT})",
                      f"ring buffer size, fis={k}"))
    if "l2pf" in opt_in:
        rules += [("l2pf == 0 or (sd == 'z' and not ring and not retime)", "L2 prefetch: plain, smem or zq streaming"),
                  (f"l2pf == 0 or l2pf * sb < {st.shape[0]}", "L2 prefetch: fewer planes ahead than a chunk has")]
    return rules


def fission_groups(st: Stencil, fis: int) -> list[tuple[tuple[str, Expr], ...]]:
    """The outputs split into ``fis`` consecutive groups of near-equal size (larger groups first)."""
    outs = list(st.outputs)
    n = len(outs)
    sizes = [n // fis + (1 if i < n % fis else 0) for i in range(fis)]
    groups, at = [], 0
    for k in sizes:
        groups.append(tuple(outs[at:at + k]))
        at += k
    return groups


def _sub_stencil(st: Stencil, group: tuple[tuple[str, Expr], ...]) -> Stencil:
    """``st`` restricted to the outputs of ``group`` and the inputs they read (same layout and halo).

    The same object for the same group (``_memo``), so what is derived from it is derived once."""
    def make() -> Stencil:
        used: set[str] = set()
        for _, e in group:
            used |= {a.array for a in _accs(e)}
        return replace(st, outputs=tuple(group), inputs=tuple(a for a in st.inputs if a in used))

    return _memo(st, ("sub", tuple(name for name, _ in group)), make)


@dataclass(frozen=True)
class CudaKernelSpec:
    """Everything a backend needs to launch one generated kernel."""

    source: str
    name: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    args: tuple[str, ...]        # array names in kernel-argument order (inputs, lines, outputs, "coefg")
    outputs: tuple[str, ...]
    constants: dict              # __constant__ symbol -> values
    names: tuple[str, ...] = ()  # every kernel of the source, launched in this order (fission: several)
    options: tuple[str, ...] = ()  # extra nvcc options (-maxrregcount)
    shared: tuple[int, ...] = ()  # dynamic shared memory bytes per kernel of ``kernels`` (dsmem); () = none

    @property
    def kernels(self) -> tuple[str, ...]:
        return self.names or (self.name,)

    @property
    def dynamic_smem(self) -> int:
        """The most dynamic shared memory any of the kernels needs per block (0 without ``dsmem``)."""
        return max(self.shared, default=0)


# ---------------------------------------------------------------------------
def _terms(e: Expr) -> list[Expr]:
    """Additive terms of ``e`` (through + and -; a - keeps its sign via Neg)."""
    if isinstance(e, Bin) and e.op in "+-":
        right = _terms(e.b)
        if e.op == "-":
            right = [Neg(t) for t in right]
        return _terms(e.a) + right
    if isinstance(e, Neg):
        return [Neg(t) for t in _terms(e.a)]
    if isinstance(e, Bin) and e.op == "*":
        # distribute a factor that reads no array (a coefficient, a literal) over a sum
        if not _reads(e.a):
            return [Bin("*", e.a, t) for t in _terms(e.b)]
        if not _reads(e.b):
            return [Bin("*", t, e.b) for t in _terms(e.a)]
    return [e]


def _reads(e: Expr) -> bool:
    return bool(set(_accs(e)) or set(_lines(e)))


def _accs(e: Expr) -> Iterator[Access]:
    from apps.stencil.expr import accesses

    return iter(accesses(e))


def _lines(e: Expr) -> Iterator[Line]:
    from apps.stencil.expr import lines

    return iter(lines(e))


def _lit(v: float) -> str:
    return repr(float(v))


def _pointers(st: Stencil, base: str) -> list[str]:
    """One 64-bit pointer per 3-D array at ``base`` (see the module docstring on addressing)."""
    T = st.ctype
    out = [f"  const {T} * __restrict__ p_{a} = {a} + ({base});" for a in st.inputs]
    out += [f"  {T} * __restrict__ p_{o} = {o} + ({base});" for o, _ in st.outputs]
    return out


def _advance(st: Stencil, step: int) -> list[str]:
    """Move every array pointer ``step`` elements on (one plane per streaming step)."""
    return [f"    p_{a} += {step};" for a in list(st.inputs) + [o for o, _ in st.outputs]]


def _load(arr: str, off: int | str) -> str:
    return f"__ldg(p_{arr} + ({off}))"


def _store(c: Mapping[str, Any], out: str, off: int | str, value: str) -> str:
    """Plain store, or ``__stcs`` (evict-first) when the configuration asks for streaming stores."""
    if c["stcs"]:
        return f"__stcs(p_{out} + ({off}), {value});"
    return f"p_{out}[{off}] = {value};"


class _Renderer:
    """Renders the output statements of one kernel body.

    ``keep=False`` (``cse`` off) writes every formula inline and leaves common
    subexpressions to nvcc, which may recompute or keep them as its register
    allocator sees fit.  ``keep=True`` (``cse`` on) names every subexpression
    that occurs more than once in the body (across outputs and merged points)
    as a ``const`` temporary computed once before the stores, which keeps it
    live in a register: the two ends of the recompute-vs-keep trade-off of
    register pressure.
    """

    def __init__(self, ctype: str, keep: bool, prefix: str) -> None:
        self.T = ctype
        self.keep = keep
        self.prefix = prefix

    def statements(self, items: list[tuple[Any, Expr, Any]]) -> list[str]:
        """``items``: (store(value) -> statement, formula, leaf renderer); the temporaries come first."""
        if not self.keep:
            return [store(render(e, leaf)) for store, e, leaf in items]
        counts: dict[str, int] = {}
        reads: dict[Expr, bool] = {}

        def reads_arrays(e: Expr) -> bool:
            if e not in reads:
                if isinstance(e, (Access, Line)):
                    reads[e] = True
                elif isinstance(e, Bin):
                    reads[e] = reads_arrays(e.a) or reads_arrays(e.b)
                elif isinstance(e, Neg):
                    reads[e] = reads_arrays(e.a)
                else:
                    reads[e] = False
            return reads[e]

        def full(e: Expr, leaf: Any, count: bool) -> str:
            if isinstance(e, Bin):
                s = f"({full(e.a, leaf, count)} {e.op} {full(e.b, leaf, count)})"
            elif isinstance(e, Neg):
                s = f"(-{full(e.a, leaf, count)})"
            else:
                return render(e, leaf)
            if count and reads_arrays(e):
                counts[s] = counts.get(s, 0) + 1
            return s

        for _, e, leaf in items:
            full(e, leaf, True)
        temps: dict[str, str] = {}
        decls: list[str] = []

        def emit(e: Expr, leaf: Any) -> tuple[str, str]:
            if isinstance(e, Bin):
                fa, ea = emit(e.a, leaf)
                fb, eb = emit(e.b, leaf)
                f, out = f"({fa} {e.op} {fb})", f"({ea} {e.op} {eb})"
            elif isinstance(e, Neg):
                fa, ea = emit(e.a, leaf)
                f, out = f"(-{fa})", f"(-{ea})"
            else:
                s = render(e, leaf)
                return s, s
            if counts.get(f, 0) >= 2:
                if f not in temps:
                    temps[f] = f"{self.prefix}{len(temps)}"
                    decls.append(f"const {self.T} {temps[f]} = {out};")
                return f, temps[f]
            return f, out

        stores = [store(emit(e, leaf)[1]) for store, e, leaf in items]
        return decls + stores



def _end_of_step(st: Stencil, keys: Iterable[tuple[str, int, int]], cols: Mapping[Any, Sequence[int]],
                 qn: Mapping[Any, str], tiled: Iterable[str], pz: int, counters: Sequence[str] = ()) -> list[str]:
    """The end of one z step of a streamed kernel: shift each register queue by one
    plane, step the circular buffers' counters (``counters``: zq), advance the
    pointers and the shared tiles' offsets, close the loop.

    Why one function: the register-queue and the ring-buffer kernels end their
    steps the same way, and a fix to one must reach the other.
    """
    lines = [f"    {qn[k]}_{t} = {qn[k]}_{t + 1};" for k in keys for t in range(cols[k][1] - cols[k][0])]
    lines.extend(counters)
    lines.extend(_advance(st, pz))
    lines.extend(f"    t_{arr} += {pz};" for arr in sorted(tiled))
    lines.append("  }")
    return lines

def generate_cuda(st: Stencil, c: Mapping[str, Any]) -> CudaKernelSpec:
    """Source and launch geometry of configuration ``c``; raises ValueError when illegal.

    With ``fis > 1`` (kernel fission) the source holds one kernel per group of
    outputs (``fission_groups``), all with the same parameter list; each reads
    only the inputs its outputs need, once per kernel, and they are launched
    one after the other on the same grid.
    """
    why = cuda_why_illegal(st, c)
    if why:
        raise ValueError(f"illegal CUDA configuration for {st.name}: {why}")
    T = st.ctype
    nz, ny, nx = st.shape
    pz, py, px = st.padded_shape
    if pz * py * px >= 2**31:
        raise ValueError(f"grid {st.shape} too large for 32-bit indexing; use a smaller size")
    tile_x = c["bx"] * c["bmx"] * c["cmx"]
    tile_y = c["by"] * c["bmy"] * c["cmy"]
    ncoef = max(1, len(st.coefs))
    params = [f"const {T} * __restrict__ {a}" for a in st.inputs]
    params += [f"const {T} * __restrict__ {a}" for a, _ in st.line_arrays]
    params += [f"{T} * __restrict__ {o}" for o, _ in st.outputs]
    params += [f"const {T} * __restrict__ coefg"]
    groups = fission_groups(st, c["fis"])
    names = [KERNEL_NAME] if len(groups) == 1 else [f"{KERNEL_NAME}_{i}" for i in range(len(groups))]
    # dsmem is named only when on, so an existing configuration's source stays byte-identical
    shown = {k: v for k, v in c.items() if not (k in OPTIONAL_PARAMS and v == OPTIONAL_PARAMS[k])}
    L: list[str] = [f"// generated for {st.name}: {shown}"]
    if c.get("zq", False) and c["prefetch"]:
        L.extend(_zq_async_helpers(st, wait1=not c.get("zqs", False)))
    if c.get("l2pf", 0):
        L.extend(_l2_prefetch_helper(st))
    if c["coef"] == "constant":
        L.append(f"__constant__ {T} c_coef[{ncoef}];")
    for name, group in zip(names, groups):
        L.extend(_kernel(_sub_stencil(st, group), c, name, params))
    if c["sd"] == "z":
        grid = (nx // tile_x, ny // tile_y, c["sb"])
    else:
        grid = (nx // tile_x, ny // tile_y, nz // (c["bz"] * c["bmz"] * c["cmz"]))
    args = tuple(st.inputs) + tuple(a for a, _ in st.line_arrays) + tuple(o for o, _ in st.outputs) + ("coefg",)
    consts = {"c_coef": list(st.coefs) or [0.0]} if c["coef"] == "constant" else {}
    options = (f"-maxrregcount={c['maxrreg']}",) if c["maxrreg"] else ()
    return CudaKernelSpec("\n".join(L) + "\n", names[0], grid, (c["bx"], c["by"], c["bz"]), args,
                          tuple(o for o, _ in st.outputs), consts, tuple(names), options,
                          cuda_dynamic_smem(st, c))


def _zq_async_helpers(st: Stencil, wait1: bool = True) -> list[str]:
    """``zq`` with ``prefetch``: the asynchronous global-to-shared copy of one element, its group commit
    and the waits (PTX ``cp.async``, sm_80+; on older devices a plain copy and no-ops).

    Why inline PTX rather than ``<cuda_pipeline_primitives.h>``: its ``__pipeline_wait_prior`` has no
    memory clobber, so without a ``__syncthreads`` after it (the queues need none: each thread reads
    only its own slots) nvcc may move the shared-memory reads of the waited-for plane above the wait.
    Under ``#ifdef __CUDACC__`` because the CPU emulator of the tests defines the four itself.
    ``wait1=False`` (``zqs``, which waits for everything at the top of a step): without ``zq_wait1``,
    which nvcc would warn about as unused.
    """
    T = st.ctype
    out = ["#ifdef __CUDACC__",
            "// zq + prefetch: the next plane of each z-queue goes from global to shared memory with no register",
            f"static __device__ __forceinline__ void zq_async({T} *s, const {T} *g)",
            "{",
            "#if __CUDA_ARCH__ >= 800",
            (f'  asm volatile("cp.async.ca.shared.global [%0], [%1], {st.itemsize};" :: '
             '"r"((unsigned)__cvta_generic_to_shared(s)), "l"(__cvta_generic_to_global(g)) : "memory");'),
            "#else",
            "  *s = __ldg(g);",
            "#endif",
            "}",
            "static __device__ __forceinline__ void zq_commit()",
            "{",
            "#if __CUDA_ARCH__ >= 800",
            '  asm volatile("cp.async.commit_group;" ::: "memory");',
            "#endif",
            "}",
            "static __device__ __forceinline__ void zq_wait1()  // every group but the newest has landed",
            "{",
            "#if __CUDA_ARCH__ >= 800",
            '  asm volatile("cp.async.wait_group 1;" ::: "memory");',
            "#endif",
            "}",
            "static __device__ __forceinline__ void zq_wait_all()",
            "{",
            "#if __CUDA_ARCH__ >= 800",
            '  asm volatile("cp.async.wait_all;" ::: "memory");',
            "#endif",
            "}",
            "#endif"]
    if not wait1:
        at = out.index("static __device__ __forceinline__ void zq_wait1()  // every group but the newest has landed")
        del out[at:at + 6]
    return out


def _l2_prefetch_helper(st: Stencil) -> list[str]:
    """``l2pf``: a hint that brings the line holding ``p`` into L2 (PTX ``prefetch.global.L2``). It takes an
    address and no destination register, so a streaming thread can have the planes ahead on their way without
    holding registers for them, which is what the latency-bound high-order kernels lack (docs/STENCILS.md,
    Nsight Compute readings: 8-12 warps per SM, long-scoreboard stalls). Under ``#ifdef __CUDACC__``: the CPU
    emulator of the tests defines it, checking that every prefetched address lies inside a kernel argument."""
    return ["#ifdef __CUDACC__",
            f"static __device__ __forceinline__ void l2_prefetch(const {st.ctype} *p)",
            "{",
            '  asm volatile("prefetch.global.L2 [%0];" :: "l"(__cvta_generic_to_global(p)));',
            "}",
            "#endif"]


def _kernel(st: Stencil, c: Mapping[str, Any], name: str, params: list[str]) -> list[str]:
    """One kernel computing every output of ``st`` (a fission group's sub-stencil, or the whole stencil)."""
    T = st.ctype
    hz, hy, hx = st.halo
    _, py, px = st.padded_shape
    PX, PZ = px, py * px
    bx, by, bz = c["bx"], c["by"], c["bz"]
    tile_x = bx * c["bmx"] * c["cmx"]
    tile_y = by * c["bmy"] * c["cmy"]
    stream = c["sd"] == "z"
    pts = _thread_points(c)  # merged points of one thread: (oz, oy, ox) offsets from its origin

    def coef_leaf(e: Coef) -> str:
        if c["coef"] == "literal":
            return _lit(st.coefs[e.index])
        return f"c_coef[{e.index}]" if c["coef"] == "constant" else f"__ldg(&coefg[{e.index}])"

    L: list[str] = []
    if c["maxrreg"]:  # no launch bounds: nvcc ignores -maxrregcount for a kernel that has them
        L.append('extern "C" __global__ void')
    else:
        L.append(f'extern "C" __global__ void __launch_bounds__({bx * by * bz}, {c["minb"]})')
    L.append(f"{name}({', '.join(params)})")
    L.append("{")
    L.append(f"  const int X0 = blockIdx.x * {tile_x} + threadIdx.x * {c['bmx']};")
    L.append(f"  const int Y0 = blockIdx.y * {tile_y} + threadIdx.y * {c['bmy']};")

    def line_leaf(e: Line, z_expr: str, oy: int, ox: int) -> str:
        if e.axis == 2:
            return f"__ldg(&{e.array}[X0 + {ox + hx + e.d}])"
        if e.axis == 1:
            return f"__ldg(&{e.array}[Y0 + {oy + hy + e.d}])"
        return f"__ldg(&{e.array}[{z_expr} + {hz + e.d}])"

    rend = _Renderer(T, c["cse"], "t")
    if not stream:
        L.append(f"  const int Z0 = blockIdx.z * {bz * c['bmz'] * c['cmz']} + threadIdx.z * {c['bmz']};")
        L.append(f"  const int base = ((Z0 + {hz}) * {py} + (Y0 + {hy})) * {px} + X0 + {st.x0};")
        L.extend(_pointers(st, "base"))
        names: dict[tuple[str, int, int, int], str] = {}
        loads: list[str] = []
        for (oz, oy, ox) in pts:
            for _, e in st.outputs:
                for a in sorted(_accs(e), key=lambda a: (a.array, a.dz, a.dy, a.dx)):
                    key = (a.array, oz + a.dz, oy + a.dy, ox + a.dx)
                    if key not in names:
                        names[key] = f"v{len(names)}"
                        off = key[1] * PZ + key[2] * PX + key[3]
                        loads.append(f"  const {T} {names[key]} = {_load(a.array, off)};")
        L.extend(loads)
        items = []
        for (oz, oy, ox) in pts:
            def leaf(e: Expr, oz: int = oz, oy: int = oy, ox: int = ox) -> str:
                if isinstance(e, Access):
                    return names[(e.array, oz + e.dz, oy + e.dy, ox + e.dx)]
                if isinstance(e, Line):
                    return line_leaf(e, f"(Z0 + {oz})", oy, ox)
                return coef_leaf(e)  # type: ignore[arg-type]
            for o, e in st.outputs:
                items.append((lambda v, o=o, off=oz * PZ + oy * PX + ox: _store(c, o, off, v), e, leaf))
        L.extend("  " + s for s in rend.statements(items))
    elif c["retime"]:
        L.extend(_retimed_body(st, c, pts, coef_leaf, line_leaf))
    elif c["ring"]:
        L.extend(_ring_body(st, c, pts, coef_leaf, line_leaf, rend))
    else:
        L.extend(_streaming_body(st, c, pts, coef_leaf, line_leaf, rend))
    L.append("}")
    return L


def _streaming_body(st: Stencil, c: Mapping[str, Any], pts: list[tuple[int, int, int]], coef_leaf: Any,
                    line_leaf: Any, rend: _Renderer) -> list[str]:
    T = st.ctype
    nz = st.shape[0]
    hz, hy, hx = st.halo
    _, py, px = st.padded_shape
    PX, PZ = px, py * px
    bx, by = c["bx"], c["by"]
    ch = nz // c["sb"]
    staged = set(_staged_arrays(st)) if c["smem"] else set()
    # columns: (array, cy, cx) -> [lo, hi] of dz
    cols = _queue_columns(st, pts)
    if staged:  # uniform range per staged array, so one tile per plane serves all its columns
        rng: dict[str, list[int]] = {}
        for (arr, _, _), (lo, hi) in cols.items():
            if arr in staged:
                r = rng.setdefault(arr, [lo, hi])
                r[0], r[1] = min(r[0], lo), max(r[1], hi)
        for k in cols:
            if k[0] in staged:
                cols[k] = list(rng[k[0]])
    keys = sorted(cols)
    qn = {k: f"q{i}" for i, k in enumerate(keys)}
    tw = bx * c["bmx"] * c["cmx"] + 2 * hx
    th = by * c["bmy"] * c["cmy"] + 2 * hy
    nt = bx * by
    L: list[str] = []
    L.append(f"  const int zs = blockIdx.z * {ch};")
    L.append(f"  const int base0 = ((zs + {hz}) * {py} + (Y0 + {hy})) * {px} + X0 + {st.x0};")
    L.extend(_pointers(st, "base0"))
    if staged:
        L.append("  const int tid = threadIdx.y * blockDim.x + threadIdx.x;")
        L.append(f"  const int tbase0 = ((zs + {hz}) * {py} + blockIdx.y * {by * c['bmy'] * c['cmy']}) * {px}"
                 f" + blockIdx.x * {bx * c['bmx'] * c['cmx']} + {st.x0 - hx};")
        for arr in sorted(staged):
            L.append(f"  __shared__ {T} s_{arr}[{th * tw}];")
            L.append(f"  const {T} * __restrict__ t_{arr} = {arr} + tbase0;")
        L.append(f"  const int sme = (threadIdx.y * {c['bmy']} + {hy}) * {tw} + threadIdx.x * {c['bmx']} + {hx};")
    # zq: the queues of two or more planes in dynamic shared memory, each a circular buffer of its planes
    zoff = _zq_layout(st, c)[0] if c.get("zq", False) else {}
    depths = sorted({cols[k][1] - cols[k][0] + 1 for k in zoff})
    # prefetch: with zq, the next plane of every z-queue goes into the queue's spare slot (cp.async), so a
    # d-plane queue is a circular buffer of d + 1 slots; without zq, a register per queue (n_q)
    pfq = bool(zoff) and c["prefetch"]
    nslots = {d: d + 1 if pfq else d for d in depths}
    if zoff:
        L.append("  extern __shared__ __align__(16) unsigned char dsm[];  // the z-queues (zq: dynamic, opt-in)")
        L.append("  const int tid = threadIdx.y * blockDim.x + threadIdx.x;")
        L.append(f"  {T} * const zq = reinterpret_cast<{T} *>(dsm) + tid;  // slot s of a queue at off: zq[off + s * {nt}]")
        for d in depths:
            L.append(f"  int zo{d} = 0;  // {nt} x the slot of plane lo of every {d}-plane queue")
    # zqs: the one-plane columns of the arrays read at in-plane neighbours come from tiles of their plane in
    # shared memory (after the slabs, two buffers each: this step's at zb, the next step's at TILE - zb)
    tiles = _tiles_of(st, cols, c.get("zqsn", 0)) if c.get("zqs", False) else []
    tp = th * tw
    tbase = {t: sum((hi - lo + 2) * nt for lo, hi in cols.values() if hi > lo) + 2 * i * tp
             for i, t in enumerate(tiles)}
    tk = {k for k in keys if k not in zoff and (k[0], cols[k][0]) in tbase}  # the columns read from the tiles
    n_tel = -(-tp // nt)
    if tiles:
        L.append(f"  {T} * const zt = reinterpret_cast<{T} *>(dsm) + (threadIdx.y * {c['bmy']} + {hy}) * {tw} + "
                 f"threadIdx.x * {c['bmx']} + {hx};  // this thread's origin in a tile")
        L.append(f"  const int gorg = (threadIdx.y * {c['bmy']} + {hy}) * {PX} + threadIdx.x * {c['bmx']} + {hx};")
        for el in range(n_tel):  # element tid + el * NT of a {th} x {tw} tile: its offset from p_<array>
            i = f"(tid + {el * nt})"
            L.append(f"  const int tg{el} = ({i} / {tw}) * {PX} + {i} % {tw} - gorg;")
        L.append(f"  int zb = 0;  // this step's buffer of every tile (0 or {tp})")

    def zslot(d: int, t: int) -> str:
        """The element offset of plane lo + t of a d-plane queue in this step (slot (zo/NT + t) mod d, or
        mod d + 1 with prefetch, where t = d is the spare slot the next plane is copied into)."""
        return f"zo{d}" if t == 0 else f"zi{d}_{t}"

    for k in keys:
        if k in zoff or k in tk:
            continue
        lo, hi = cols[k]
        L.append(f"  {T} {', '.join(f'{qn[k]}_{t}' for t in range(hi - lo + 1))};")

    def tile_copies(zn: str, into: str, ind: str) -> list[str]:
        """zqs: cp.async of every tile's plane (``zn``: the plane offset of the step it is for) into buffer
        ``into``; the last element row guarded where NT does not divide the tile."""
        out = []
        for (arr, d) in tiles:
            for el in range(n_tel):
                stmt = (f"zq_async(&zq[{into} + {tbase[(arr, d)] + el * nt}], "
                        f"p_{arr} + ({zn} + {d * PZ} + tg{el}));")
                out.append(f"{ind}if (tid < {tp - el * nt}) {stmt}" if (el + 1) * nt > tp else f"{ind}{stmt}")
        return out
    n_el = -(-th * tw // nt)
    arr_hi = {arr: max(cols[k][1] for k in keys if k[0] == arr) for arr in staged}

    def tile_load(arr: str, plane: int, into: str) -> list[str]:
        """Cooperative load of one plane tile of ``arr`` (``plane`` relative to the current step);
        ``into`` 'smem' or 'reg'."""
        out = []
        for el in range(n_el):
            i = f"(tid + {el * nt})"
            cond = f"{i} < {th * tw}" if (el + 1) * nt > th * tw else None
            src = f"__ldg(t_{arr} + ({plane * PZ} + ({i} / {tw}) * {PX} + ({i} % {tw})))"
            if into == "smem":
                stmt = f"s_{arr}[{i}] = {src};"
            else:
                stmt = f"pf_{arr}_{el} = {src};"
            out.append(f"    if ({cond}) {stmt}" if cond else f"    {stmt}")
        return out

    def fill(k: tuple[str, int, int], slot: int, plane: int) -> str:
        arr, cy, cx = k
        if k in zoff:  # the preload: plane lo + slot in slot ``slot`` (zo = 0)
            return f"    zq[{zoff[k] + slot * nt}] = {_load(arr, plane * PZ + cy * PX + cx)};"
        if arr in staged:
            return f"    {qn[k]}_{slot} = s_{arr}[sme + {cy * tw + cx}];"
        return f"    {qn[k]}_{slot} = {_load(arr, plane * PZ + cy * PX + cx)};"

    # preload the first len-1 planes of every queue
    maxlen = max(hi - lo for lo, hi in cols.values())
    for t in range(maxlen):
        if staged:
            for arr in sorted(staged):
                lo = min(cols[k][0] for k in keys if k[0] == arr)
                if t < arr_hi[arr] - lo:
                    L.append("  {")
                    L.extend(tile_load(arr, lo + t, "smem"))
                    L.append("  }")
            L.append("  __syncthreads();")
        L.append("  {")
        for k in keys:
            lo, hi = cols[k]
            if t < hi - lo:
                L.append(fill(k, t, lo + t))
        L.append("  }")
        if staged:
            L.append("  __syncthreads();")
    if pfq:  # plane hi as well: the loop's first step reads it, its copies fill the spare slots from there on
        L.append("  {")
        L.extend(fill(k, cols[k][1] - cols[k][0], cols[k][1]) for k in keys if k in zoff)
        L.append("  }")
    if tiles:  # the first step's tiles into buffer 0, waited for at the top of the first step
        L.extend(tile_copies("0", "0", "  "))
        L.append("  zq_commit();")
    pf = c["prefetch"] and not pfq
    if pf:
        for k in keys:
            if k[0] not in staged:
                L.append(f"  {T} n_{qn[k]} = {_load(k[0], cols[k][1] * PZ + k[1] * PX + k[2])};")
        for arr in sorted(staged):
            L.append(f"  {T} {', '.join(f'pf_{arr}_{el}' for el in range(n_el))};")
            L.append("  {")
            L.extend(tile_load(arr, arr_hi[arr], "reg"))
            L.append("  }")
    L.append(f"  #pragma unroll {c['uf']}")
    L.append(f"  for (int z = 0; z < {ch}; ++z) {{")
    if c.get("l2pf", 0):  # the plane l2pf steps ahead of the one this step loads, at each of the thread's points
        d = c["l2pf"]
        L.append(f"    const int zp = z + {d} < {ch} ? {d * PZ} : 0;  // this step's plane in a chunk's last {d} steps")
        top: dict[str, int] = {}
        for (arr, _, _), (_, hi) in cols.items():
            top[arr] = max(top.get(arr, hi), hi)
        for arr in sorted(top):
            for oy, ox in sorted({(p[1], p[2]) for p in pts}):
                L.append(f"    l2_prefetch(p_{arr} + (zp + {top[arr] * PZ + oy * PX + ox}));")
    if staged:
        for arr in sorted(staged):
            if pf:
                for el in range(n_el):
                    i = f"(tid + {el * nt})"
                    cond = f"{i} < {th * tw}" if (el + 1) * nt > th * tw else None
                    st_ = f"s_{arr}[{i}] = pf_{arr}_{el};"
                    L.append(f"    if ({cond}) {st_}" if cond else f"    {st_}")
            else:
                L.extend(tile_load(arr, arr_hi[arr], "smem"))
        L.append("    __syncthreads();")
    used = {(d, nslots[d] - 1) for d in depths}  # the slots this step reads or writes (no unused variables)
    for (_, oy, ox) in pts:
        for _, e in st.outputs:
            for a in _accs(e):
                k = (a.array, oy + a.dy, ox + a.dx)
                if k in zoff:
                    used.add((cols[k][1] - cols[k][0] + 1, a.dz - cols[k][0]))
    for d, t in sorted(used):
        if t:
            ns = nslots[d]
            L.append(f"    const int {zslot(d, t)} = zo{d} < {(ns - t) * nt} ? zo{d} + {t * nt} : zo{d} - {(ns - t) * nt};")
    if tiles:  # one barrier per step: this step's copies (issued a step ago) have landed for every thread, and
        # every thread has finished the step before, whose buffer the copies below overwrite
        L.append("    zq_wait_all();  // this thread's copies for this step (queues and tiles) have landed")
        L.append("    __syncthreads();  // everyone's; and the step before's buffer is free")
    if pfq:  # the plane the next step needs (hi + 1) into each queue's spare slot, in flight during this step
        # branch-free: in a chunk's last step plane hi again (already read, never past the chunk or the grid),
        # into the spare slot no step reads; an `if` around the copies cost hypterm (32x4, maxrreg 128) 140 B
        # of spills, this form none (ptxas, sm_90)
        L.append(f"    const int zn = z + 1 < {ch} ? {PZ} : 0;  // the next plane; plane hi again in the last step")
        for k in keys:
            if k in zoff:
                lo, hi = cols[k]
                L.append(f"    zq_async(&zq[{zslot(hi - lo + 1, hi - lo + 1)} + {zoff[k]}], "
                         f"p_{k[0]} + (zn + {hi * PZ + k[1] * PX + k[2]}));")
        if tiles:
            L.extend(tile_copies("zn", f"{tp} - zb", "    "))
            L.append("    zq_commit();  // one group per step, waited for at the top of the next")
        else:
            L.append("    zq_commit();  // one group per step")
            # right away: the group waited for was issued a whole step ago; before the loads of the one-plane
            # columns, which the wait's memory clobber would otherwise pin above it, all live at once
            L.append("    zq_wait1();  // this step's plane hi, copied in the step before, has landed")
    for k in keys:
        lo, hi = cols[k]
        last = hi - lo
        if (k in zoff and pfq) or k in tk:  # copied in the step before (or preloaded)
            continue
        if k in zoff:  # the new plane into the oldest slot
            L.append(f"    zq[{zslot(last + 1, last)} + {zoff[k]}] = {_load(k[0], hi * PZ + k[1] * PX + k[2])};")
        elif k[0] in staged:
            L.append(fill(k, last, 0))
        elif pf:
            L.append(f"    {qn[k]}_{last} = n_{qn[k]};")
        else:
            L.append(fill(k, last, hi))
    if staged:
        L.append("    __syncthreads();")
    if pf:
        L.append(f"    if (z + 1 < {ch}) {{")
        for k in keys:
            if k[0] not in staged:
                L.append(f"      n_{qn[k]} = {_load(k[0], (cols[k][1] + 1) * PZ + k[1] * PX + k[2])};")
        for arr in sorted(staged):
            L.extend("  " + s for s in tile_load(arr, arr_hi[arr] + 1, "reg"))
        L.append("    }")
    items = []
    for (_, oy, ox) in pts:
        def leaf(e: Expr, oy: int = oy, ox: int = ox) -> str:
            if isinstance(e, Access):
                k = (e.array, oy + e.dy, ox + e.dx)
                if k in zoff:
                    return f"zq[{zslot(cols[k][1] - cols[k][0] + 1, e.dz - cols[k][0])} + {zoff[k]}]"
                if k in tk:
                    return f"zt[zb + {tbase[(k[0], e.dz)] + k[1] * tw + k[2]}]"
                return f"{qn[k]}_{e.dz - cols[k][0]}"
            if isinstance(e, Line):
                return line_leaf(e, "(zs + z)", oy, ox)
            return coef_leaf(e)
        for o, e in st.outputs:
            items.append((lambda v, o=o, off=oy * PX + ox: _store(c, o, off, v), e, leaf))
    L.extend("    " + s for s in rend.statements(items))
    counters = [f"    zo{d} = zo{d} == {(nslots[d] - 1) * nt} ? 0 : zo{d} + {nt};" for d in depths]
    if tiles:
        counters.append(f"    zb = {tp} - zb;")
    L.extend(_end_of_step(st, [k for k in keys if k not in zoff and k not in tk], cols, qn, staged, PZ, counters))
    if pfq:
        L.append("  zq_wait_all();  // the last step's copy lands before the block's shared memory is released")
    return L


def _ring_planes(st: Stencil) -> dict[str, tuple[int, int]]:
    """(lowest, highest) z-offset read of each array staged in shared memory (read at in-plane neighbours)."""
    out: dict[str, tuple[int, int]] = {}
    staged = set(_staged_arrays(st))
    for a in st.all_accesses():
        if a.array in staged:
            lo, hi = out.get(a.array, (a.dz, a.dz))
            out[a.array] = (min(lo, a.dz), max(hi, a.dz))
    return out


def _ring_bytes_per_point(st: Stencil, fis: int) -> int:
    """Shared bytes per tile point of the ring buffers, the largest over the fission groups."""
    return max(sum(hi - lo + 1 for lo, hi in _ring_planes(_sub_stencil(st, g)).values()) * st.itemsize
               for g in fission_groups(st, fis))


def _ring_bytes(st: Stencil, c: Mapping[str, Any]) -> int:
    tw = c["bx"] * c["bmx"] * c["cmx"] + 2 * st.halo[2]
    th = c["by"] * c["bmy"] * c["cmy"] + 2 * st.halo[1]
    return tw * th * _ring_bytes_per_point(st, c["fis"])


def _dsmem_layout(st: Stencil, c: Mapping[str, Any]) -> tuple[dict[str, int], int]:
    """Byte offset of each ring in the dynamic shared array (sorted by name, each DSMEM_ALIGN-aligned), and
    the bytes the launch must pass.  ``st``: one kernel's (sub-)stencil."""
    tw = c["bx"] * c["bmx"] * c["cmx"] + 2 * st.halo[2]
    th = c["by"] * c["bmy"] * c["cmy"] + 2 * st.halo[1]
    offsets, at = {}, 0
    for arr, (lo, hi) in sorted(_ring_planes(st).items()):
        at = -(-at // DSMEM_ALIGN) * DSMEM_ALIGN
        offsets[arr] = at
        at += (hi - lo + 1) * th * tw * st.itemsize
    return offsets, at


def cuda_dynamic_smem(st: Stencil, c: Mapping[str, Any]) -> tuple[int, ...]:
    """Dynamic shared memory bytes per kernel of configuration ``c`` (launch order), () without ``dsmem``.

    The space bounds the rings' bytes (``_ring_bytes``) by ``DSMEM_LIMIT``;
    the alignment adds at most DSMEM_ALIGN - 1 bytes per ring (none for
    doubles: a streaming tile of >= 32 threads has an even number of points).
    """
    if c.get("zq", False):
        return tuple(_zq_layout(_sub_stencil(st, g), c)[1] for g in fission_groups(st, c["fis"]))
    if not (c.get("dsmem", False) and c["ring"]):
        return ()
    return tuple(_dsmem_layout(_sub_stencil(st, g), c)[1] for g in fission_groups(st, c["fis"]))


def _thread_points(c: Mapping[str, Any]) -> list[tuple[int, int, int]]:
    """The merged points of one thread: (oz, oy, ox) offsets from its origin (block and cyclic merging)."""
    bx, by, bz = c["bx"], c["by"], c["bz"]
    return [(cz * bz * c["bmz"] + mz, cy * by * c["bmy"] + my, cx * bx * c["bmx"] + mx)
            for cz in range(c["cmz"]) for mz in range(c["bmz"])
            for cy in range(c["cmy"]) for my in range(c["bmy"])
            for cx in range(c["cmx"]) for mx in range(c["bmx"])]


def _queue_columns(st: Stencil, pts: Sequence[tuple[int, int, int]]) -> dict[tuple[str, int, int], list[int]]:
    """The columns a streamed thread reads: (array, cy, cx) -> [lowest, highest] z-offset, over its points.

    One queue per column, shared by the thread's points (a column another
    merged point reads is loaded once): the register queues of
    ``_streaming_body`` and, with ``zq``, the shared-memory ones.
    """
    return _shifted_columns(_point_columns(st), pts)


def _point_columns(st: Stencil) -> dict[tuple[str, int, int], tuple[int, int]]:
    """The columns one point reads: (array, dy, dx) -> (lowest, highest) dz (kept per stencil: read only)."""
    def make() -> dict[tuple[str, int, int], tuple[int, int]]:
        cols: dict[tuple[str, int, int], tuple[int, int]] = {}
        for _, e in st.outputs:
            for a in _accs(e):
                k = (a.array, a.dy, a.dx)
                lo, hi = cols.get(k, (a.dz, a.dz))
                cols[k] = (min(lo, a.dz), max(hi, a.dz))
        return cols

    return _memo(st, ("columns",), make)


def _shifted_columns(base: Mapping[tuple[str, int, int], tuple[int, int]],
                     pts: Sequence[tuple[int, int, int]]) -> dict[tuple[str, int, int], list[int]]:
    """The union of ``base`` (one point's columns) shifted to every point of ``pts``, ranges merged."""
    cols: dict[tuple[str, int, int], list[int]] = {}
    for (_, oy, ox) in pts:
        for (arr, dy, dx), (lo, hi) in base.items():
            k = (arr, oy + dy, ox + dx)
            r = cols.get(k)
            if r is None:
                cols[k] = [lo, hi]
            else:
                r[0], r[1] = min(r[0], lo), max(r[1], hi)
    return cols


def _zq_elements(bases: Sequence[Mapping[tuple[str, int, int], tuple[int, int]]],
                 pts: Sequence[tuple[int, int, int]], extra: int = 0) -> tuple[int, ...]:
    """Per kernel (one ``_point_columns`` each): elements per thread in queues of two or more planes,
    each with ``extra`` slots more than its planes (1: the prefetch slot of ``zq`` with ``prefetch``)."""
    return tuple(sum(hi - lo + 1 + extra for lo, hi in _shifted_columns(b, pts).values() if hi > lo)
                 for b in bases)


def _zq_layout(st: Stencil, c: Mapping[str, Any]) -> tuple[dict[tuple[str, int, int], int], int]:
    """``zq``: element offset of each z-queue's slab in the dynamic shared array, and the bytes per block.

    ``st``: one kernel's (sub-)stencil.  Every column queue of D >= 2 planes
    gets D x NT elements (NT threads per block; plane slot s of thread tid at
    ``s * NT + tid``), in key order, and with ``prefetch`` (D + 1) x NT: the
    slot the next plane is copied into while the current one is computed;
    (D [+ 1]) x NT x itemsize is a multiple of 16 bytes for NT >= 32, so every
    slab starts 16-byte aligned.  Queues of one plane (in-plane neighbours)
    stay in registers and take no slab.
    """
    nt = c["bx"] * c["by"] * c["bz"]
    extra = 1 if c.get("prefetch", False) else 0
    cols = _queue_columns(st, _thread_points(c))
    offsets, at = {}, 0
    for k in sorted(cols):
        lo, hi = cols[k]
        if hi > lo:
            offsets[k] = at
            at += (hi - lo + 1 + extra) * nt
    if c.get("zqs", False):  # the staged tiles after the slabs, two buffers each (see _streaming_body)
        at += 2 * len(_tiles_of(st, cols, c.get("zqsn", 0))) * _tile_points(st, c)
    return offsets, at * st.itemsize


def cuda_zq_doubles(st: Stencil, c: Mapping[str, Any]) -> tuple[int, ...]:
    """Per kernel of ``c`` (launch order): the elements one thread keeps in z-queues of two or more planes
    (with ``prefetch``: one more per queue, its prefetch slot).

    With ``zq`` a kernel's dynamic shared memory is this x threads x itemsize.
    """
    pts, extra = _thread_points(c), 1 if c.get("prefetch", False) else 0

    def make() -> tuple[int, ...]:
        return _zq_elements([_point_columns(_sub_stencil(st, g)) for g in fission_groups(st, c["fis"])], pts, extra)

    return _memo(st, ("zq doubles", c["fis"], tuple(pts), extra), make)


def _tile_points(st: Stencil, c: Mapping[str, Any]) -> int:
    """Points of one in-plane tile: the block tile and the stencil's x/y halo."""
    return (c["bx"] * c["bmx"] * c["cmx"] + 2 * st.halo[2]) * (c["by"] * c["bmy"] * c["cmy"] + 2 * st.halo[1])


def _tiles_of(st: Stencil, cols: Mapping[tuple[str, int, int], Sequence[int]], n: int = 0) -> list[tuple[str, int]]:
    """``zqs``: the (array, plane) tiles of one kernel, sorted: every plane at which an array read at
    in-plane neighbours (``_staged_arrays``) has a one-plane column among ``cols`` (a thread's columns).
    ``n`` > 0 (``zqsn``): only the ``n`` of them with the most such columns (the in-plane loads per thread
    and step a tile replaces), ties in (array, plane) order; still returned sorted (the layout's order)."""
    staged = set(_staged_arrays(st))
    reads = Counter((k[0], lo) for k, (lo, hi) in cols.items() if lo == hi and k[0] in staged)
    tiles = sorted(reads)
    if n and n < len(tiles):
        tiles = sorted(sorted(tiles, key=lambda t: -reads[t])[:n])
    return tiles


def cuda_zqs_tiles(st: Stencil, c: Mapping[str, Any]) -> tuple[int, ...]:
    """Per kernel of ``c`` (launch order): the in-plane tiles ``zqs`` stages (each double-buffered; with
    ``zqsn``, at most that many)."""
    pts, n = _thread_points(c), c.get("zqsn", 0)
    return tuple(_memo(sub, ("zqs tiles", tuple(pts), n), lambda sub=sub: len(_tiles_of(sub, _queue_columns(sub, pts), n)))
                 for sub in (_sub_stencil(st, g) for g in fission_groups(st, c["fis"])))


def _pow2_above(n: int) -> int:
    p = 1
    while p <= n:
        p *= 2
    return p


@functools.lru_cache(maxsize=64)
def _zq_rule_threads(st: Stencil, extra: int = 0) -> str:
    """The space's expression of the most threads per block whose z-queues fit ``DSMEM_LIMIT`` (``zq``;
    ``extra=1``: each queue with its prefetch slot, ``zq`` with ``prefetch``).

    Block sizes are powers of two, so the rule ``bx * by * bz <= T`` with T
    the largest power of two (at most 1024) with ``T x max(cuda_zq_doubles) x
    itemsize <= DSMEM_LIMIT`` is exact; T = 0 where a kernel has no queue of
    two planes (zq would change nothing there).  Why a decision tree: the
    space's rules are expressions (no tables), and the queue elements per
    thread depend on fis and the four merge factors and, with cyclic merging,
    on the distance between a thread's points (``bx * bmx``), which decides
    whether two points share columns.  Past ``2 hx + 3`` the points' columns
    are disjoint and the count no longer changes, so ``min(bx * bmx, SX)`` (SX
    the next power of two) is exact.  With powers of two as leaves (7 values)
    the tree collapses to a few dozen branches, which keeps the space's
    enumeration as fast as without zq.  Cached per stencil (``cuda_space`` is
    built often).
    """
    most = DSMEM_LIMIT // st.itemsize

    def threads(bases: Sequence[Any], subs: Sequence[Stencil], c: Mapping[str, Any]) -> int:
        per = _zq_elements(bases, _thread_points(c), extra)
        t = 0
        if min(per) > 0:
            t = 1024
            while t and t * max(per) > most:
                t //= 2
        return t

    return _merge_tree(st, threads)


@functools.lru_cache(maxsize=64)
def _zqs_rule_counts(st: Stencil) -> tuple[str, str]:
    """``zqs``: the space's expressions of, over the kernels of a configuration, the most z-queue elements
    per thread (with the prefetch slot: ``max(cuda_zq_doubles)``) and the most staged tiles (``_zqs_tiles``),
    as decision trees over the same variables as ``_zq_rule_threads`` (exact for the same reason: past
    ``2 hx + 3`` a cyclic stride no longer changes which columns the points share)."""
    def elements(bases: Sequence[Any], subs: Sequence[Stencil], c: Mapping[str, Any]) -> int:
        return max(_zq_elements(bases, _thread_points(c), 1))

    def tiles(bases: Sequence[Any], subs: Sequence[Stencil], c: Mapping[str, Any]) -> int:
        pts = _thread_points(c)
        return max(len(_tiles_of(sub, _shifted_columns(b, pts))) for b, sub in zip(bases, subs))

    return _merge_tree(st, elements), _merge_tree(st, tiles)


def _merge_tree(st: Stencil, value: Any) -> str:
    """A decision tree (an expression of the space) of ``value(bases, sub-stencils, c)``, an int that depends
    on fis, the x/y merge factors and the distances ``min(bx * bmx, SX)``, ``min(by * bmy, SY)`` only
    (see ``_zq_rule_threads``)."""
    hy, hx = st.halo[1], st.halo[2]
    sx, sy = _pow2_above(2 * hx + 3), _pow2_above(2 * hy + 3)
    merges = [m for m in itertools.product((1, 2, 4), repeat=4) if m[0] * m[1] * m[2] * m[3] <= 8]
    table: dict[tuple[int, ...], int] = {}
    for fis in range(1, len(st.outputs) + 1):
        subs = [_sub_stencil(st, g) for g in fission_groups(st, fis)]
        bases = [_point_columns(sub) for sub in subs]
        for bmx, bmy, cmx, cmy in merges:
            xs = [1 << i for i in range(sx.bit_length()) if bmx <= 1 << i]  # bx * bmx: bmx .. sx
            ys = [1 << i for i in range(sy.bit_length()) if bmy <= 1 << i]
            for ax in (xs if cmx > 1 else [sx]):      # the distance matters only between cyclic points
                for ay in (ys if cmy > 1 else [sy]):
                    c = {"bx": ax // bmx, "by": ay // bmy, "bz": 1, "bmx": bmx, "bmy": bmy, "bmz": 1,
                         "cmx": cmx, "cmy": cmy, "cmz": 1}
                    t = value(bases, subs, c)
                    for vx in (xs if cmx == 1 else [ax]):
                        for vy in (ys if cmy == 1 else [ay]):
                            table[(fis, bmx * bmy * cmx * cmy, bmx, bmy, cmx, cmy, vx, vy)] = t
    names = ["fis", "bmx * bmy * cmx * cmy", "bmx", "bmy", "cmx", "cmy", f"min(bx * bmx, {sx})",
             f"min(by * bmy, {sy})"]

    def tree(rows: dict[tuple[int, ...], int], order: Sequence[int]) -> str:
        vals = set(rows.values())
        if len(vals) == 1:
            return str(vals.pop())
        at = next(i for i in order if len({k[i] for k in rows}) > 1)
        subs: dict[str, list[int]] = {}  # values of the split variable with the same subtree share a branch
        for v in sorted({k[at] for k in rows}):
            subs.setdefault(tree({k: q for k, q in rows.items() if k[at] == v}, order), []).append(v)
        parts = sorted(subs.items(), key=lambda p: len(p[1]))
        out = parts[-1][0]  # the most values take the else branch (values the space never gives do too)
        for sub, vs in reversed(parts[:-1]):
            test = f"{names[at]} == {vs[0]}" if len(vs) == 1 else f"{names[at]} in ({', '.join(map(str, vs))})"
            out = f"({sub} if {test} else {out})"
        return out

    # the shortest of a few variable orders: the points per thread first (what most stencils depend on
    # alone), the merge factors before the strides they qualify
    orders = [(1, 0, 2, 3, 4, 5, 6, 7), (0, 1, 2, 3, 4, 5, 6, 7), (1, 0, 4, 5, 2, 3, 6, 7), (1, 4, 5, 0, 2, 3, 6, 7),
              (1, 5, 4, 3, 2, 0, 7, 6), (4, 5, 1, 0, 2, 3, 6, 7)]
    return min((tree(table, o) for o in orders), key=len)


def _ring_body(st: Stencil, c: Mapping[str, Any], pts: list[tuple[int, int, int]], coef_leaf: Any,
               line_leaf: Any, rend: _Renderer) -> list[str]:
    """Streaming along z with a shared-memory ring buffer per staged array.

    An array read at in-plane neighbours keeps its planes lo..hi (2r+1 for a
    symmetric stencil) as tiles in shared memory; each step loads one new
    plane into the slot of the plane that has just left the window, and
    every read of that array comes straight from shared memory, so it holds
    no per-column register queue (the register cost of ``smem``, which
    copies each staged plane into a queue per column).  Plane ``lo + k``
    lives in slot ``(z + k) % D``.  Arrays read only along their column keep
    the register queue.
    """
    T = st.ctype
    nz = st.shape[0]
    hz, hy, hx = st.halo
    _, py, px = st.padded_shape
    PX, PZ = px, py * px
    bx, by = c["bx"], c["by"]
    ch = nz // c["sb"]
    planes = _ring_planes(st)
    cols: dict[tuple[str, int, int], list[int]] = {}
    for (_, oy, ox) in pts:
        for _, e in st.outputs:
            for a in _accs(e):
                if a.array in planes:
                    continue
                k = (a.array, oy + a.dy, ox + a.dx)
                r = cols.setdefault(k, [a.dz, a.dz])
                r[0], r[1] = min(r[0], a.dz), max(r[1], a.dz)
    keys = sorted(cols)
    qn = {k: f"q{i}" for i, k in enumerate(keys)}
    tw = bx * c["bmx"] * c["cmx"] + 2 * hx
    th = by * c["bmy"] * c["cmy"] + 2 * hy
    nt = bx * by
    n_el = -(-th * tw // nt)
    L: list[str] = []
    L.append(f"  const int zs = blockIdx.z * {ch};")
    L.append(f"  const int base0 = ((zs + {hz}) * {py} + (Y0 + {hy})) * {px} + X0 + {st.x0};")
    L.extend(_pointers(st, "base0"))
    L.append("  const int tid = threadIdx.y * blockDim.x + threadIdx.x;")
    L.append(f"  const int tbase0 = ((zs + {hz}) * {py} + blockIdx.y * {by * c['bmy'] * c['cmy']}) * {px}"
             f" + blockIdx.x * {bx * c['bmx'] * c['cmx']} + {st.x0 - hx};")
    offsets = _dsmem_layout(st, c)[0] if c.get("dsmem", False) else {}
    if offsets:
        L.append("  extern __shared__ __align__(16) unsigned char dsm[];  // the rings (dsmem: dynamic, opt-in)")
    for arr in sorted(planes):
        lo, hi = planes[arr]
        if offsets:
            L.append(f"  {T} * const s_{arr} = reinterpret_cast<{T} *>(dsm + {offsets[arr]});")
        else:
            L.append(f"  __shared__ {T} s_{arr}[{(hi - lo + 1) * th * tw}];")
        L.append(f"  const {T} * __restrict__ t_{arr} = {arr} + tbase0;")
    L.append(f"  const int sme = (threadIdx.y * {c['bmy']} + {hy}) * {tw} + threadIdx.x * {c['bmx']} + {hx};")
    for k in keys:
        lo, hi = cols[k]
        L.append(f"  {T} {', '.join(f'{qn[k]}_{t}' for t in range(hi - lo + 1))};")

    def tile_load(arr: str, plane: int, slot: str, ind: str) -> list[str]:
        out = []
        for el in range(n_el):
            i = f"(tid + {el * nt})"
            cond = f"{i} < {th * tw}" if (el + 1) * nt > th * tw else None
            src = f"__ldg(t_{arr} + ({plane * PZ} + ({i} / {tw}) * {PX} + ({i} % {tw})))"
            stmt = f"s_{arr}[({slot}) * {th * tw} + {i}] = {src};"
            out.append(f"{ind}if ({cond}) {stmt}" if cond else f"{ind}{stmt}")
        return out

    # preload planes lo .. hi-1 of every ring into slots 0 .. D-2, and the first queue entries
    for arr in sorted(planes):
        lo, hi = planes[arr]
        for t in range(hi - lo):
            L.extend(tile_load(arr, lo + t, str(t), "  "))
    for k in keys:
        lo, hi = cols[k]
        for t in range(hi - lo):
            L.append(f"  {qn[k]}_{t} = {_load(k[0], (lo + t) * PZ + k[1] * PX + k[2])};")
    L.append(f"  #pragma unroll {c['uf']}")
    L.append(f"  for (int z = 0; z < {ch}; ++z) {{")
    for arr in sorted(planes):
        lo, hi = planes[arr]
        d = hi - lo + 1
        L.extend(tile_load(arr, hi, f"(z + {d - 1}) % {d}", "    "))
    L.append("    __syncthreads();")
    for k in keys:
        lo, hi = cols[k]
        L.append(f"    {qn[k]}_{hi - lo} = {_load(k[0], hi * PZ + k[1] * PX + k[2])};")
    items = []
    for (_, oy, ox) in pts:
        def leaf(e: Expr, oy: int = oy, ox: int = ox) -> str:
            if isinstance(e, Access):
                if e.array in planes:
                    lo, hi = planes[e.array]
                    d = hi - lo + 1
                    return (f"s_{e.array}[((z + {e.dz - lo}) % {d}) * {th * tw} + sme + "
                            f"{(oy + e.dy) * tw + ox + e.dx}]")
                k = (e.array, oy + e.dy, ox + e.dx)
                return f"{qn[k]}_{e.dz - cols[k][0]}"
            if isinstance(e, Line):
                return line_leaf(e, "(zs + z)", oy, ox)
            return coef_leaf(e)
        for o, e in st.outputs:
            items.append((lambda v, o=o, off=oy * PX + ox: _store(c, o, off, v), e, leaf))
    L.extend("    " + s for s in rend.statements(items))
    L.append("    __syncthreads();  // the oldest slot is overwritten next step")
    L.extend(_end_of_step(st, keys, cols, qn, planes, PZ))
    return L


def _retimed_body(st: Stencil, c: Mapping[str, Any], pts: list[tuple[int, int, int]], coef_leaf: Any,
                  line_leaf: Any) -> list[str]:
    """Retiming: plane p = z + hz is loaded once; each term with plane offset d adds into the
    partial sum of output z' = p - d, kept in a queue of 2*hz+1 accumulators per output point."""
    T = st.ctype
    nz = st.shape[0]
    hz, hy = st.halo[0], st.halo[1]
    _, py, px = st.padded_shape
    PX, PZ = px, py * px
    ch = nz // c["sb"]
    depth = 2 * hz + 1
    L: list[str] = []
    L.append(f"  const int zs = blockIdx.z * {ch};")
    L.append(f"  const int base0 = ((zs + {hz}) * {py} + (Y0 + {hy})) * {px} + X0 + {st.x0};")
    # pointers start at plane p = -hz (relative to zs) and move one plane per iteration
    L.extend(_pointers(st, f"base0 - {hz * PZ}"))
    accs = []
    for pi, (_, oy, ox) in enumerate(pts):
        for oi, (o, _) in enumerate(st.outputs):
            name = f"a{pi}_{oi}"
            accs.append(name)
            L.append(f"  {T} {', '.join(f'{name}_{j} = 0' for j in range(depth))};")
    # term groups per plane offset d, per output point
    groups: dict[tuple[int, int, int], list[Expr]] = {}
    for pi in range(len(pts)):
        for oi, (_, e) in enumerate(st.outputs):
            for t in _terms(e):
                ds = {a.dz for a in _accs(t)} | {ln.d for ln in _lines(t) if ln.axis == 0}
                d = ds.pop() if ds else 0
                groups.setdefault((pi, oi, d), []).append(t)
    # iteration j handles input plane p = zs + j - hz (j from 0 to ch + 2hz - 1); accumulator slot
    # s holds output z' = p - d with d = s - hz ... the output leaving the window is slot 0.
    L.append(f"  for (int j = 0; j < {ch + 2 * hz}; ++j) {{")
    L.append(f"    const int p = j - {hz};  // plane relative to zs")
    for (pi, oi, d), ts in sorted(groups.items()):
        _, oy, ox = pts[pi]

        def leaf(e: Expr, oy: int = oy, ox: int = ox, d: int = d) -> str:
            if isinstance(e, Access):
                return _load(e.array, (oy + e.dy) * PX + ox + e.dx)
            if isinstance(e, Line):
                # a z-line at offset d from the output z' = p - d is strz[p]
                return line_leaf(e, f"(zs + p - {d})", oy, ox) if e.axis == 0 else line_leaf(e, "", oy, ox)
            return coef_leaf(e)
        from apps.stencil.expr import total

        # output z' = p - d sits in slot hz - d (slot 0 is the oldest, finished after this plane)
        slot = hz - d
        L.append(f"    a{pi}_{oi}_{slot} += {render(total(ts), leaf)};")
    L.append(f"    if (j >= {2 * hz}) {{")
    for pi, (_, oy, ox) in enumerate(pts):
        for oi, (o, _) in enumerate(st.outputs):
            # output plane j - 2hz = p - hz
            L.append("      " + _store(c, o, -hz * PZ + oy * PX + ox, f"a{pi}_{oi}_0"))
    L.append("    }")
    for name in accs:
        for s in range(depth - 1):
            L.append(f"    {name}_{s} = {name}_{s + 1};")
        L.append(f"    {name}_{depth - 1} = 0;")
    L.extend(_advance(st, PZ))
    L.append("  }")
    return L


_ = (Const, Neg)
