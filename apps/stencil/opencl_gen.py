"""OpenCL kernels with Garvey and Abdelrahman's optimisation set.

Why these knobs: Garvey & Abdelrahman (ICPP 2015, Sec. III) tune synthetic
stencils over work-group size per dimension (``wgx, wgy, wgz``), block
merging (a work-item computes ``bm`` consecutive points), cyclic merging
(``cm`` points a work-group-width apart), vectorisation in x (``vx`` up to
16), and one data-loading technique (``mem``: plain global loads, a
local-memory tile with halo loaded cooperatively, or read-only image memory).
Their restrictions are rules here: all factors powers of two,
``W * B * C <= N`` in each dimension (and dividing it, so there are no edge
work-items), ``VX <= BX``, one loading technique at a time.  Two rules are
ours and documented: the work-group holds at most 1024 work-items (the
NVIDIA limit; a device that allows fewer refuses at launch) and a work-item
computes at most 32 points (keeps compile time bounded).  Both are switched
off with ``limits=False`` for the paper-faithful space (``apps.stencil.space``,
preset "paper"), where the device refuses what it cannot run, as in the
paper; cyclic-merging loops of more than 32 points are then kept rolled
(``#pragma unroll 1``, ``large_loops="rolled"``, the default): left to
NVIDIA's OpenCL compiler (``large_loops="compiler"``) they were unrolled so
far that a random configuration of the paper's space took about 16 s to
build on an H100 (docs/GARVEY.md, "Build time").  With ``"rolled"`` the
cyclic loops are also kept rolled when unrolling them would put more than
``MAX_UNROLLED_LOADS`` stencil loads in the body (a 117-point stencil
unrolls up to 8 points, a 729-point box none): a 729-point box with 32
points unrolled took about 37 s per build.  Cyclic points lie a work-group
apart and share no inputs, so unrolling them buys instruction-level
parallelism, not fewer loads (block merging, the loop that does remove
loads, stays unrolled).

Image memory: ``image_layout="2d"`` is the paper's variant (Garvey &
Abdelrahman 2018, Sec. 4.6: the input array as a 2-D image, rows of x, one
row per (z, y)); ``"3d"`` (the default, ours) reads a 3-D image.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from apps.stencil.expr import Access, Coef, Expr, Line, render
from apps.stencil.spec import Stencil

__all__ = [
    "OPENCL_PARAMS",
    "OpenCLKernelSpec",
    "generate_opencl",
    "opencl_baseline",
    "opencl_is_legal",
    "opencl_local_bytes",
    "opencl_why_illegal",
]

KERNEL_NAME = "stencil_kernel"
LOCAL_LIMIT = 48 * 1024
MAX_WG = 1024
#: cyclic loops are unrolled only while points x stencil loads stays within this (large_loops="rolled")
MAX_UNROLLED_LOADS = 1024

OPENCL_PARAMS: dict[str, list[Any]] = {
    "wgx": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
    "wgy": [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
    "wgz": [1, 2, 4, 8, 16, 32, 64],
    "bmx": [1, 2, 4, 8, 16], "bmy": [1, 2, 4, 8], "bmz": [1, 2, 4, 8],
    "cmx": [1, 2, 4, 8], "cmy": [1, 2, 4, 8], "cmz": [1, 2, 4, 8],
    "vx": [1, 2, 4, 8, 16],
    "mem": ["global", "local", "image"],
}


def opencl_baseline() -> dict[str, Any]:
    """One point per work-item, 32x4x1 work-groups, global memory."""
    return {"wgx": 32, "wgy": 4, "wgz": 1, "bmx": 1, "bmy": 1, "bmz": 1, "cmx": 1, "cmy": 1, "cmz": 1,
            "vx": 1, "mem": "global"}


def _tile(c: Mapping[str, Any]) -> tuple[int, int, int]:
    return (c["wgz"] * c["bmz"] * c["cmz"], c["wgy"] * c["bmy"] * c["cmy"], c["wgx"] * c["bmx"] * c["cmx"])


def _local_bytes(st: Stencil, c: Mapping[str, Any]) -> int:
    tz, ty, tx = _tile(c)
    hz, hy, hx = st.halo
    return (tz + 2 * hz) * (ty + 2 * hy) * (tx + 2 * hx) * st.itemsize


def _is_pow2(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 1 and v & (v - 1) == 0


def opencl_why_illegal(st: Stencil, c: Mapping[str, Any], *, limits: bool = True) -> str | None:
    """The first rule ``c`` breaks, or None when it is legal for ``st``.

    ``limits=False`` drops our two bounds (1024 work-items, 32 points per
    work-item) and accepts any power of two for the factors.
    """
    for k, vals in OPENCL_PARAMS.items():
        if not limits and k != "mem" and _is_pow2(c.get(k)):
            continue
        if c.get(k) not in vals:
            return f"{k}={c.get(k)!r} not in {vals}"
    if limits and c["wgx"] * c["wgy"] * c["wgz"] > MAX_WG:
        return f"work-group of {c['wgx'] * c['wgy'] * c['wgz']} > {MAX_WG} work-items"
    for ax, t in enumerate(_tile(c)):
        n = st.shape[ax]
        if t > n or n % t:
            return f"W*B*C = {t} must divide N = {n} in dimension {'zyx'[ax]}"
    if c["vx"] > c["bmx"]:
        return f"vx={c['vx']} must be <= bmx={c['bmx']}"
    pts = c["bmx"] * c["bmy"] * c["bmz"] * c["cmx"] * c["cmy"] * c["cmz"]
    if limits and pts > 32:
        return f"{pts} points per work-item > 32"
    if limits and c["mem"] == "local" and _local_bytes(st, c) > LOCAL_LIMIT:
        return f"local tile of {_local_bytes(st, c)} bytes > {LOCAL_LIMIT}"
    if c["mem"] == "image" and (st.dtype != "float32" or len(st.inputs) != 1):
        return "image memory needs one float32 input"
    if st.line_arrays:
        return "the OpenCL generator handles 3-D arrays only"
    return None


def opencl_is_legal(st: Stencil, c: Mapping[str, Any], *, limits: bool = True) -> bool:
    return opencl_why_illegal(st, c, limits=limits) is None


def opencl_local_bytes(st: Stencil, c: Mapping[str, Any]) -> int:
    """Bytes of the local-memory tile ``c`` needs (0 unless ``mem == 'local'``)."""
    return _local_bytes(st, c) * len(st.inputs) if c.get("mem") == "local" else 0


@dataclass(frozen=True)
class OpenCLKernelSpec:
    source: str
    name: str
    global_size: tuple[int, int, int]
    local_size: tuple[int, int, int]
    args: tuple[str, ...]
    outputs: tuple[str, ...]
    images: tuple[str, ...]


def _lit(v: float, T: str) -> str:
    s = repr(float(v))
    return s + "f" if T == "float" else s


def generate_opencl(st: Stencil, c: Mapping[str, Any], *, limits: bool = True,
                    image_layout: str = "3d", large_loops: str = "rolled") -> OpenCLKernelSpec:
    """OpenCL C for configuration ``c``; raises ValueError when it is illegal.

    ``large_loops``: what the cyclic-merging loops get when a work-item
    computes more than 32 points: ``"rolled"`` (``#pragma unroll 1``, also
    when points x stencil loads exceeds ``MAX_UNROLLED_LOADS``) or
    ``"compiler"`` (no pragma above 32 points, full unrolling up to 32: the
    compiler decides, and may unroll them all; the generator before the
    bound, kept to measure build times against).
    """
    if image_layout not in ("2d", "3d"):
        raise ValueError(f"image_layout={image_layout!r}: use '2d' (the paper's) or '3d'")
    if large_loops not in ("rolled", "compiler"):
        raise ValueError(f"large_loops={large_loops!r}: use 'rolled' or 'compiler'")
    why = opencl_why_illegal(st, c, limits=limits)
    if why:
        raise ValueError(f"illegal OpenCL configuration for {st.name}: {why}")
    T = st.ctype
    V = c["vx"]
    TV = T if V == 1 else f"{T}{V}"
    nz, ny, nx = st.shape
    hz, hy, hx = st.halo
    xo = st.x0
    _, py, px = st.padded_shape
    tz, ty, tx = _tile(c)
    wgx, wgy, wgz = c["wgx"], c["wgy"], c["wgz"]
    mem = c["mem"]
    L: list[str] = [f"// generated for {st.name}: {dict(c)}"]
    if T == "double":
        L.append("#pragma OPENCL EXTENSION cl_khr_fp64 : enable")
    if mem == "image":
        L.append("__constant sampler_t smp = CLK_NORMALIZED_COORDS_FALSE | CLK_ADDRESS_NONE | CLK_FILTER_NEAREST;")
    params = []
    for a in st.inputs:
        img_t = "image2d_t" if image_layout == "2d" else "image3d_t"
        params.append(f"__read_only {img_t} {a}" if mem == "image" else f"__global const {T} * restrict {a}")
    params += [f"__global {T} * restrict {o}" for o, _ in st.outputs]
    L.append(f"__kernel __attribute__((reqd_work_group_size({wgx}, {wgy}, {wgz})))")
    L.append(f"void {KERNEL_NAME}({', '.join(params)})")
    L.append("{")
    L.append(f"  const int GX = get_group_id(0) * {tx}, GY = get_group_id(1) * {ty}, GZ = get_group_id(2) * {tz};")
    L.append("  const int lx = get_local_id(0), ly = get_local_id(1), lz = get_local_id(2);")
    L.append(f"  const int X0 = GX + lx * {c['bmx']}, Y0 = GY + ly * {c['bmy']}, Z0 = GZ + lz * {c['bmz']};")
    LX, LY, LZ = tx + 2 * hx, ty + 2 * hy, tz + 2 * hz
    if mem == "local":
        for a in st.inputs:
            L.append(f"  __local {T} t_{a}[{LX * LY * LZ}];")
        nwg = wgx * wgy * wgz
        L.append(f"  const int lid = (lz * {wgy} + ly) * {wgx} + lx;")
        L.append(f"  for (int i = lid; i < {LX * LY * LZ}; i += {nwg}) {{")
        L.append(f"    const int ix = i % {LX}, iy = (i / {LX}) % {LY}, iz = i / {LX * LY};")
        for a in st.inputs:
            L.append(f"    t_{a}[i] = {a}[((GZ + iz) * {py} + GY + iy) * {px} + GX + {xo - hx} + ix];")
        L.append("  }")
        L.append("  barrier(CLK_LOCAL_MEM_FENCE);")

    def load(e: Access) -> str:
        if mem == "global":
            idx = f"((z + {hz + e.dz}) * {py} + y + {hy + e.dy}) * {px} + x + {xo + e.dx}"
            return f"{e.array}[{idx}]" if V == 1 else f"vload{V}(0, {e.array} + {idx})"
        if mem == "local":
            idx = f"((z - GZ + {hz + e.dz}) * {LY} + y - GY + {hy + e.dy}) * {LX} + x - GX + {hx + e.dx}"
            return f"t_{e.array}[{idx}]" if V == 1 else f"vload{V}(0, t_{e.array} + {idx})"
        if image_layout == "2d":
            reads = [f"read_imagef({e.array}, smp, (int2)(x + {xo + e.dx + k}, (z + {hz + e.dz}) * {py} + y + "
                     f"{hy + e.dy})).x" for k in range(V)]
        else:
            reads = [f"read_imagef({e.array}, smp, (int4)(x + {xo + e.dx + k}, y + {hy + e.dy}, z + {hz + e.dz}, 0)).x"
                     for k in range(V)]
        return reads[0] if V == 1 else f"(({TV})({', '.join(reads)}))"

    def leaf(e: Expr) -> str:
        if isinstance(e, Access):
            return load(e)
        if isinstance(e, Coef):
            return _lit(st.coefs[e.index], T)
        if isinstance(e, Line):
            raise TypeError("line arrays are not supported by the OpenCL generator")
        raise TypeError(e)

    pts = c["bmx"] * c["bmy"] * c["bmz"] * c["cmx"] * c["cmy"] * c["cmz"]
    loads = pts * len(st.all_accesses())
    if pts <= 32 and (large_loops == "compiler" or loads <= MAX_UNROLLED_LOADS):
        cyc = "  #pragma unroll"
    elif large_loops == "rolled":
        cyc = f"  #pragma unroll 1  // {pts} points x {len(st.all_accesses())} loads: kept rolled (build time)"
    else:
        cyc = "  // cyclic loop left to the compiler (more than 32 points)"
    L.append(cyc)
    L.append(f"  for (int cz = 0; cz < {c['cmz']}; ++cz)")
    L.append("  #pragma unroll")
    L.append(f"  for (int mz = 0; mz < {c['bmz']}; ++mz)")
    L.append(cyc)
    L.append(f"  for (int cy = 0; cy < {c['cmy']}; ++cy)")
    L.append("  #pragma unroll")
    L.append(f"  for (int my = 0; my < {c['bmy']}; ++my)")
    L.append(cyc)
    L.append(f"  for (int cx = 0; cx < {c['cmx']}; ++cx)")
    L.append("  #pragma unroll")
    L.append(f"  for (int mx = 0; mx < {c['bmx']}; mx += {V}) {{")
    L.append(f"    const int z = Z0 + cz * {wgz * c['bmz']} + mz;")
    L.append(f"    const int y = Y0 + cy * {wgy * c['bmy']} + my;")
    L.append(f"    const int x = X0 + cx * {wgx * c['bmx']} + mx;")
    L.append(f"    const int o = ((z + {hz}) * {py} + y + {hy}) * {px} + x + {xo};")
    for o, e in st.outputs:
        val = render(e, leaf)
        if V == 1:
            L.append(f"    {o}[o] = {val};")
        else:
            L.append(f"    vstore{V}({val}, 0, {o} + o);")
    L.append("  }")
    L.append("}")
    src = "\n".join(L) + "\n"
    if V > 1:  # literals multiply vectors fine; scalar constants are promoted by OpenCL C
        pass
    gsize = (nx // (c["bmx"] * c["cmx"]), ny // (c["bmy"] * c["cmy"]), nz // (c["bmz"] * c["cmz"]))
    return OpenCLKernelSpec(src, KERNEL_NAME, gsize, (wgx, wgy, wgz), tuple(st.inputs) + tuple(o for o, _ in st.outputs),
                            tuple(o for o, _ in st.outputs), tuple(st.inputs) if mem == "image" else ())
