"""Search spaces of the two generators, with the papers' rules as constraints.

Why expressions rather than one callable: the rules are written as
``SearchSpace.require`` expressions over few parameters each, so the space
can split into components and sample, count and enumerate them exactly;
stencil-specific numbers (halo, grid size, shared-memory bytes) are
formatted into the expressions.  ``cuda_why_illegal`` / ``opencl_why_illegal``
state the same rules in Python; the tests check the two never disagree.
"""

from __future__ import annotations

from typing import Any

from apps.stencil import cuda_gen, opencl_gen
from apps.stencil.spec import Stencil
from ensemble.space import Boolean, Enum, PowerOfTwo, SearchSpace

__all__ = ["cuda_space", "opencl_space"]


def _param(name: str, values: list[Any]) -> Any:
    if all(isinstance(v, bool) for v in values) and len(values) == 2:
        return Boolean(name)
    if all(isinstance(v, int) and not isinstance(v, bool) for v in values) and values == \
            [1 << i for i in range(values[0].bit_length() - 1, values[-1].bit_length())]:
        return PowerOfTwo(name, values[0], values[-1])
    return Enum(name, values)


def cuda_space(st: Stencil) -> SearchSpace:
    """csTuner's space for ``st`` (see ``apps.stencil.cuda_gen``)."""
    s = SearchSpace()
    s.add(*[_param(k, v) for k, v in cuda_gen.CUDA_PARAMS.items()])
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
    s.require(f"not smem or {n_staged} * (bx * bmx * cmx + {2 * hx}) * (by * bmy * cmy + {2 * hy}) * "
              f"{st.itemsize} <= {cuda_gen.SMEM_LIMIT}", name="shared memory size")
    if cuda_gen.cuda_retimable(st):
        s.require("not retime or (not smem and not prefetch)", name="retiming alone")
    else:
        s.require("not retime", name="retiming needs single-plane terms")
    return s


def opencl_space(st: Stencil) -> SearchSpace:
    """Garvey and Abdelrahman's space for ``st`` (see ``apps.stencil.opencl_gen``)."""
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
