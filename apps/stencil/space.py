"""Search spaces of the two generators, with the papers' rules as constraints.

Why expressions rather than one callable: the rules are written as
``SearchSpace.require`` expressions over few parameters each, so the space
can split into components and sample, count and enumerate them exactly;
stencil-specific numbers (halo, grid size, shared-memory bytes) are
formatted into the expressions.  ``cuda_why_illegal`` / ``opencl_why_illegal``
state the same rules in Python; the tests check the two never disagree.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from apps.stencil import cuda_gen, opencl_gen
from apps.stencil.spec import Stencil
from ensemble.space import Boolean, Enum, PowerOfTwo, SearchSpace

__all__ = ["OPENCL_PRESETS", "cuda_space", "opencl_space"]

#: ``paper``: Garvey & Abdelrahman 2018, Sec. 4.7 exactly; ``extended``: our generator's wider space
OPENCL_PRESETS = ("paper", "extended")


def _param(name: str, values: list[Any]) -> Any:
    if all(isinstance(v, bool) for v in values) and len(values) == 2:
        return Boolean(name)
    if all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in values) and values == \
            [1 << i for i in range(values[0].bit_length() - 1, values[-1].bit_length())]:
        return PowerOfTwo(name, values[0], values[-1])
    return Enum(name, values)


def cuda_space(st: Stencil, opt_in: Iterable[str] = ()) -> SearchSpace:
    """csTuner's space for ``st`` (see ``apps.stencil.cuda_gen``).

    ``opt_in``: parameters of ``cuda_gen.OPT_IN_PARAMS`` to include (built and tested, not yet shown to help
    the search; left out, a configuration takes their default and generates the source it did before they
    existed).
    """
    opt_in = tuple(opt_in)
    unknown = [p for p in opt_in if p not in cuda_gen.OPT_IN_PARAMS]
    if unknown:
        raise ValueError(f"cuda_space(opt_in={opt_in!r}): {unknown} not among {cuda_gen.OPT_IN_PARAMS}")
    s = SearchSpace()
    s.add(*[_param(k, v) for k, v in cuda_gen.CUDA_PARAMS.items()
            if k not in cuda_gen.OPT_IN_PARAMS or k in opt_in])
    nz, ny, nx = st.shape
    _, hy, hx = st.halo
    s.require("bx * by * bz >= 32 and bx * by * bz <= 1024", name="threads per block")
    s.require("bmx * bmy * bmz * cmx * cmy * cmz <= 8", name="points per thread")
    s.require(f"bx * by * bz * minb <= {cuda_gen.MAX_THREADS_PER_SM}", name="minb blocks fit an SM")
    s.require(f"{nx} % (bx * bmx * cmx) == 0", name="x tile divides nx")
    s.require(f"{ny} % (by * bmy * cmy) == 0", name="y tile divides ny")
    s.require(f"sd == 'z' or {nz} % (bz * bmz * cmz) == 0", name="z tile divides nz")
    s.require("sd == 'z' or (sb == 1 and uf == 1 and not smem and not prefetch and not retime)",
              name="streaming-only options")
    s.require("sd == 'none' or (bz == 1 and bmz == 1 and cmz == 1)", name="streaming covers z")
    s.require(f"sd == 'none' or ({nz} % sb == 0 and ({nz} // sb) % uf == 0)", name="streaming chunks")
    n_staged = len(cuda_gen._staged_arrays(st))
    # a dsmem ring kernel has no static tiles: its rings are bounded by the ring rules (cuda_space_rules)
    s.require(f"not smem or dsmem or {n_staged} * (bx * bmx * cmx + {2 * hx}) * (by * bmy * cmy + {2 * hy}) * "
              f"{st.itemsize} <= {cuda_gen.SMEM_LIMIT}", name="shared memory size")
    if cuda_gen.cuda_retimable(st):
        s.require("not retime or (not smem and not prefetch)", name="retiming alone")
    else:
        s.require("not retime", name="retiming needs single-plane terms")
    for expr, name in cuda_gen.cuda_space_rules(st, opt_in):  # register control, fission, cse, rings, dsmem, zq (issue 17)
        s.require(expr, name=name)
    return s


def _pow2_upto(n: int) -> int:
    return 1 << (max(1, n).bit_length() - 1)


def opencl_space(st: Stencil, preset: str = "paper") -> SearchSpace:
    """Garvey and Abdelrahman's space for ``st`` (see ``apps.stencil.opencl_gen``).

    ``preset="paper"`` is Sec. 4.7 of Garvey & Abdelrahman 2018 and Table 1:
    powers of two; ``W * B * C <= N`` per dimension (W and C range over 1..N);
    ``VX <= BX`` and, excluded as "obviously bad", ``BX > VX`` (so ``BX == VX``);
    no block merging in y and z; one data-loading technique (global,
    global + vectorisation, local, image), so ``VX > 1`` only with global
    memory.  On a 256^3 array that is the paper's 475,875 configurations.
    Hardware limits (work-group size, local memory) are not rules of the
    space, as in the paper: the device refuses those configurations.  The
    one rule we add, ``N % (W*B*C) == 0`` (no edge work-items), holds by
    itself when N is a power of two.

    ``preset="extended"`` is our generator's wider space (vectorised local
    and image loads, block merging in y and z, cyclic factors up to 8, at most
    1024 work-items and 32 points per work-item, local tile within 48 KiB).
    """
    if preset == "extended":
        return _opencl_space_extended(st)
    if preset != "paper":
        raise ValueError(f"preset={preset!r}: use one of {OPENCL_PRESETS}")
    nz, ny, nx = st.shape
    s = SearchSpace()
    s.add(PowerOfTwo("wgx", 1, _pow2_upto(nx)), PowerOfTwo("wgy", 1, _pow2_upto(ny)),
          PowerOfTwo("wgz", 1, _pow2_upto(nz)),
          PowerOfTwo("bmx", 1, min(16, _pow2_upto(nx))), PowerOfTwo("bmy", 1, 1), PowerOfTwo("bmz", 1, 1),
          PowerOfTwo("cmx", 1, _pow2_upto(nx)), PowerOfTwo("cmy", 1, _pow2_upto(ny)),
          PowerOfTwo("cmz", 1, _pow2_upto(nz)),
          PowerOfTwo("vx", 1, min(16, _pow2_upto(nx))), Enum("mem", ["global", "local", "image"]))
    s.require(f"wgx * bmx * cmx <= {nx} and {nx} % (wgx * bmx * cmx) == 0", name="W*B*C <= N in x")
    s.require(f"wgy * bmy * cmy <= {ny} and {ny} % (wgy * bmy * cmy) == 0", name="W*B*C <= N in y")
    s.require(f"wgz * bmz * cmz <= {nz} and {nz} % (wgz * bmz * cmz) == 0", name="W*B*C <= N in z")
    s.require("vx == bmx", name="VX <= BX, and BX > VX excluded")
    s.require("vx == 1 or mem == 'global'", name="vectorisation only with global memory")
    if st.dtype != "float32" or len(st.inputs) != 1:
        s.require("mem != 'image'", name="image memory needs one float32 input")
    return s


def _opencl_space_extended(st: Stencil) -> SearchSpace:
    s = SearchSpace()
    s.add(*[_param(k, v) for k, v in opencl_gen.OPENCL_PARAMS.items()])
    nz, ny, nx = st.shape
    hz, hy, hx = st.halo
    s.require(f"wgx * wgy * wgz <= {opencl_gen.MAX_WG}", name="work-group size")
    s.require(f"wgx * bmx * cmx <= {nx} and {nx} % (wgx * bmx * cmx) == 0", name="W*B*C <= N in x")
    s.require(f"wgy * bmy * cmy <= {ny} and {ny} % (wgy * bmy * cmy) == 0", name="W*B*C <= N in y")
    s.require(f"wgz * bmz * cmz <= {nz} and {nz} % (wgz * bmz * cmz) == 0", name="W*B*C <= N in z")
    s.require("vx <= bmx", name="VX <= BX")
    s.require("bmx * bmy * bmz * cmx * cmy * cmz <= 32", name="points per work-item")
    s.require(f"mem != 'local' or (wgz * bmz * cmz + {2 * hz}) * (wgy * bmy * cmy + {2 * hy}) * "
              f"(wgx * bmx * cmx + {2 * hx}) * {st.itemsize} <= {opencl_gen.LOCAL_LIMIT}", name="local tile size")
    if st.dtype != "float32" or len(st.inputs) != 1:
        s.require("mem != 'image'", name="image memory needs one float32 input")
    return s
