"""The paper's stencil kernels, generated from templates (Cummins et al., ADAPT 2016, Sections 2 and 3.3).

Why templates: Section 3.3 trains on programs made by "a statistical template
substitution engine" parameterised by the stencil shape (one border size per
direction: north, east, south, west), the input/output type and a boolean
*complexity* (lightweight, like Game of Life or a blur, or compute heavy,
like a PDE solver).  Every kernel here has the SkelCL structure of Section 2:
each work-item owns one matrix element; the work-group first copies a
*tile* of its own elements plus the border region into local memory (border
cells outside the matrix take the nearest cell's value), waits on a barrier,
then applies the *user function* to its element reading only the tile.

A kernel is described by data (:class:`StencilKernel`: borders, type, a list
of weighted taps and a post-operation), so the same description gives the
OpenCL source (:func:`opencl_source`) and the NumPy reference that checks
every measured launch (:func:`reference`).  The synthetic generator draws
the description from a seeded ``numpy.random.Generator``; the real-world
kernels of Table 2 (Gaussian blur, Game of Life, heat equation, Sobel,
threshold) are written by hand in the same form.

Local memory is a kernel argument (dynamic size), so one compiled program
serves every work-group size of a scenario; the tile is
``(w_r + N + S) x (w_c + W + E)`` elements.  NDRange dimension 0 is the
column (``w_c``), dimension 1 the row (``w_r``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ensemble.errors import ConfigurationError

__all__ = ["DTYPES", "StencilKernel", "opencl_source", "real_world_kernels", "reference", "synthetic_kernel",
           "tile_bytes"]

#: type name -> (OpenCL C type, NumPy dtype)
DTYPES: dict[str, tuple[str, str]] = {"int": ("int", "int32"), "float": ("float", "float32"),
                                       "double": ("double", "float64")}

#: post-operations applied to the weighted sum of taps (the user function's tail)
_POSTS = ("linear", "complex", "life", "sobel", "threshold")


@dataclass(frozen=True)
class StencilKernel:
    """One stencil program: border per direction, element type, user function as data.

    ``taps`` are ``(dr, dc, weight)`` with ``-north <= dr <= south`` and
    ``-west <= dc <= east``; ``post`` selects the user function's tail
    (``linear``: the weighted sum; ``complex``: ``iterations`` rounds of
    square roots and multiply-adds on it; ``life``: Conway's rule on the
    neighbour count; ``sobel``: gradient magnitude; ``threshold``: 0/1).
    """

    name: str
    family: str            # "synthetic-a", "synthetic-b" or the real-world kernel's name
    north: int
    east: int
    south: int
    west: int
    dtype: str = "float"
    taps: tuple[tuple[int, int, float], ...] = field(default=((0, 0, 1.0),))
    post: str = "linear"
    iterations: int = 0

    def __post_init__(self) -> None:
        if self.dtype not in DTYPES:
            raise ConfigurationError(f"StencilKernel(dtype={self.dtype!r}): use one of {sorted(DTYPES)}")
        if self.post not in _POSTS:
            raise ConfigurationError(f"StencilKernel(post={self.post!r}): use one of {_POSTS}")
        for b in (self.north, self.east, self.south, self.west):
            if b < 0:
                raise ConfigurationError(f"StencilKernel({self.name}): border sizes must be >= 0, got {b}")
        for dr, dc, _ in self.taps:
            if not (-self.north <= dr <= self.south and -self.west <= dc <= self.east):
                raise ConfigurationError(f"StencilKernel({self.name}): tap ({dr}, {dc}) lies outside the border")

    @property
    def complexity(self) -> bool:
        """The paper's boolean complexity: compute heavy (True) or lightweight."""
        return self.post == "complex"

    @property
    def np_dtype(self) -> np.dtype:
        return np.dtype(DTYPES[self.dtype][1])

    def with_dtype(self, dtype: str) -> StencilKernel:
        """The same stencil over another element type (a new scenario, same shape)."""
        return StencilKernel(f"{self.name.rsplit('.', 1)[0]}.{dtype}", self.family, self.north, self.east,
                             self.south, self.west, dtype, self.taps, self.post, self.iterations)


def tile_bytes(k: StencilKernel, wr: int, wc: int) -> int:
    """Local memory one work-group of ``wr x wc`` needs: the tile plus border (Section 2)."""
    return (wr + k.north + k.south) * (wc + k.west + k.east) * k.np_dtype.itemsize


def _lit(x: float, ctype: str) -> str:
    if ctype == "int":
        return str(round(x))
    s = repr(float(x))
    return s + "f" if ctype == "float" else s


def _user_function(k: StencilKernel, ctype: str) -> str:
    acc = "int" if ctype == "int" else ctype
    lines = [f"    {acc} acc = 0;"]
    for dr, dc, w in k.taps:
        lines.append(f"    acc += {_lit(w, ctype)} * GET({dr}, {dc});")
    if k.post == "complex":
        lines.append(f"    for (int it = 0; it < {k.iterations}; ++it) {{")
        lines.append(f"        acc = sqrt(fabs(acc) + {_lit(1.0, ctype)}) * {_lit(0.5, ctype)} + acc * "
                     f"{_lit(0.25, ctype)};")
        lines.append("    }")
    elif k.post == "life":
        lines.append("    const int self = GET(0, 0) != 0;")
        lines.append("    return (acc == 3 || (self && acc == 2)) ? 1 : 0;")
        return "\n".join(lines)
    elif k.post == "sobel":
        lines = ["    " + acc + " gx = GET(-1, 1) + 2 * GET(0, 1) + GET(1, 1) - GET(-1, -1) - 2 * GET(0, -1)"
                 " - GET(1, -1);",
                 "    " + acc + " gy = GET(1, -1) + 2 * GET(1, 0) + GET(1, 1) - GET(-1, -1) - 2 * GET(-1, 0)"
                 " - GET(-1, 1);",
                 "    return (T)sqrt((float)(gx * gx + gy * gy));"]
        return "\n".join(lines)
    elif k.post == "threshold":
        lines.append(f"    return acc > {_lit(0.5, ctype)} ? 1 : 0;")
        return "\n".join(lines)
    lines.append("    return (T)acc;")
    return "\n".join(lines)


def opencl_source(k: StencilKernel) -> str:
    """OpenCL C for ``k``: kernel ``stencil(in, out, tile, rows, cols)`` (SkelCL's structure, Section 2)."""
    ctype = DTYPES[k.dtype][0]
    head = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n" if k.dtype == "double" else ""
    return f"""{head}// {k.name}: {k.family}, border N={k.north} E={k.east} S={k.south} W={k.west}
typedef {ctype} T;
#define BN {k.north}
#define BE {k.east}
#define BS {k.south}
#define BW {k.west}
#define GET(dr, dc) tile[(ty + (dr)) * tw + (tx + (dc))]

inline T user_function(local const T* tile, const int tw, const int ty, const int tx)
{{
{_user_function(k, ctype)}
}}

kernel void stencil(global const T* in, global T* out, local T* tile, const int rows, const int cols)
{{
    const int lc = get_local_id(0), lr = get_local_id(1);
    const int wc = get_local_size(0), wr = get_local_size(1);
    const int c0 = get_group_id(0) * wc, r0 = get_group_id(1) * wr;
    const int th = wr + BN + BS, tw = wc + BW + BE;
    for (int i = lr; i < th; i += wr) {{
        const int gr = clamp(r0 + i - BN, 0, rows - 1);
        for (int j = lc; j < tw; j += wc) {{
            const int gc = clamp(c0 + j - BW, 0, cols - 1);
            tile[i * tw + j] = in[gr * cols + gc];
        }}
    }}
    barrier(CLK_LOCAL_MEM_FENCE);
    const int r = r0 + lr, c = c0 + lc;
    if (r < rows && c < cols)
        out[r * cols + c] = user_function(tile, tw, lr + BN, lc + BW);
}}
"""


def _shifted(x: np.ndarray, k: StencilKernel, dr: int, dc: int) -> np.ndarray:
    """``x[r + dr, c + dc]`` with the nearest cell for positions outside the matrix."""
    p = np.pad(x, ((k.north, k.south), (k.west, k.east)), mode="edge")
    rows, cols = x.shape
    return p[k.north + dr:k.north + dr + rows, k.west + dc:k.west + dc + cols]


def reference(k: StencilKernel, x: np.ndarray) -> np.ndarray:
    """NumPy result of ``k`` on ``x`` (the gold output every launch is checked against, Section 5)."""
    dt = k.np_dtype
    if k.post == "sobel":
        g = {(dr, dc): _shifted(x, k, dr, dc).astype(np.float64) for dr in (-1, 0, 1) for dc in (-1, 0, 1)}
        gx = g[-1, 1] + 2 * g[0, 1] + g[1, 1] - g[-1, -1] - 2 * g[0, -1] - g[1, -1]
        gy = g[1, -1] + 2 * g[1, 0] + g[1, 1] - g[-1, -1] - 2 * g[-1, 0] - g[-1, 1]
        return np.sqrt(gx * gx + gy * gy).astype(dt)
    work = np.int64 if k.dtype == "int" else np.float64
    acc: np.ndarray = np.zeros(x.shape, work)
    for dr, dc, w in k.taps:
        acc += (round(w) if k.dtype == "int" else w) * _shifted(x, k, dr, dc).astype(work)
    if k.post == "complex":
        for _ in range(k.iterations):
            acc = np.sqrt(np.abs(acc) + 1.0) * 0.5 + acc * 0.25
    elif k.post == "life":
        alive = x != 0
        return ((acc == 3) | (alive & (acc == 2))).astype(dt)
    elif k.post == "threshold":
        return (acc > 0.5).astype(dt)
    return acc.astype(dt)


def synthetic_kernel(rng: np.random.Generator, index: int, *, complex_: bool, dtype: str = "float",
                     max_border: int = 12) -> StencilKernel:
    """One synthetic stencil (Section 3.3): random border per direction, random taps, a complexity flag.

    Lightweight kernels (``synthetic-a``) read 4-12 cells of the border box
    and sum them; compute-heavy ones (``synthetic-b``) read 12-32 cells and
    run 8-24 rounds of square roots and multiply-adds on the sum.
    """
    n, e, s, w = (int(v) for v in rng.integers(1, max_border + 1, size=4))
    n_taps = int(rng.integers(12, 33) if complex_ else rng.integers(4, 13))
    rows = rng.integers(-n, s + 1, size=n_taps)
    cols = rng.integers(-w, e + 1, size=n_taps)
    weights = rng.uniform(-1.0, 1.0, size=n_taps) / n_taps
    taps = {(0, 0): 0.5}
    for dr, dc, wt in zip(rows, cols, weights):
        taps[(int(dr), int(dc))] = taps.get((int(dr), int(dc)), 0.0) + float(round(wt, 4))
    family = "synthetic-b" if complex_ else "synthetic-a"
    return StencilKernel(f"{family}-{index:02d}.{dtype}", family, n, e, s, w, dtype,
                         tuple((dr, dc, wt) for (dr, dc), wt in sorted(taps.items())),
                         "complex" if complex_ else "linear",
                         int(rng.integers(8, 25)) if complex_ else 0)


def _gaussian(radius: int, dtype: str) -> StencilKernel:
    ax = np.arange(-radius, radius + 1)
    g = np.exp(-(ax ** 2) / (2.0 * (radius / 2.0 + 0.5) ** 2))
    g2 = np.outer(g, g)
    g2 /= g2.sum()
    taps = tuple((int(dr), int(dc), float(round(g2[dr + radius, dc + radius], 6))) for dr in ax for dc in ax)
    return StencilKernel(f"gaussian{radius}.{dtype}", "gaussian", radius, radius, radius, radius, dtype, taps)


def real_world_kernels(dtype: str = "float") -> list[StencilKernel]:
    """Our versions of Table 2's real-world kernels (borders as in the table).

    Game of Life and threshold are defined on integers and always use ``int``.
    """
    ring = tuple((dr, dc, 1.0) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0))
    heat = ((-1, 0, 0.125), (1, 0, 0.125), (0, -1, 0.125), (0, 1, 0.125), (0, 0, 0.5))
    return [
        _gaussian(1, dtype), _gaussian(3, dtype), _gaussian(5, dtype),
        StencilKernel("he." + dtype, "he", 1, 1, 1, 1, dtype, heat),
        StencilKernel("sobel." + dtype, "sobel", 1, 1, 1, 1, dtype, ((0, 0, 0.0),), "sobel"),
        StencilKernel("gol.int", "gol", 1, 1, 1, 1, "int", ring, "life"),
        StencilKernel("threshold.int", "threshold", 0, 0, 0, 0, "int", ((0, 0, 1.0),), "threshold"),
    ]
