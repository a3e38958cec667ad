"""What a stencil is: arrays, a point-update formula per output, a grid.

Why one description for both generators and the reference: the OpenCL and
CUDA generators and the NumPy reference all read the same ``Stencil``, so a
kernel is checked against the formula it was generated from.

Layout convention (both backends): every 3-D array has shape
``(nz + 2*hz, ny + 2*hy, PX)`` (row-major, x fastest) where ``h`` is the
stencil's halo per axis; interior point ``(z, y, x)`` lives at
``(z + hz, y + hy, x + x0)``.  ``x0 >= hx`` and the row pitch ``PX`` are
rounded up to 128 bytes, so every row of the interior starts on a 128-byte
boundary and a warp's loads and stores are aligned (unaligned rows cost
about a fifth of the bandwidth of a low-order stencil on an H200).
Outputs are written on the interior only.  1-D line arrays along axis ``a``
have length ``n_a + 2*h_a`` (point ``i`` at ``i + h_a``).  With padded
arrays every thread computes a valid point, so kernels need no boundary
branches.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import numpy as np

from apps.stencil.expr import Access, Expr, Line, accesses, count_flops, evaluate, lines

__all__ = ["Accessor", "Stencil", "make_stencil"]


class Accessor:
    """Handed to formula functions: ``g("u", dz, dy, dx)``, ``g.line("strx", 2, d)``, ``g.w(i)``."""

    def __call__(self, array: str, dz: int = 0, dy: int = 0, dx: int = 0) -> Access:
        return Access(array, dz, dy, dx)

    def line(self, array: str, axis: int, d: int = 0) -> Line:
        return Line(array, axis, d)

    def w(self, i: int) -> Expr:
        from apps.stencil.expr import Coef

        return Coef(i)


@dataclass(frozen=True)
class Stencil:
    """A stencil computation on a 3-D grid.

    ``outputs`` maps output array name -> formula; ``inputs`` are the 3-D input
    arrays in kernel-argument order, ``line_arrays`` the 1-D ones (name -> axis).
    ``coefs`` are the values of ``Coef(i)`` nodes.
    """

    name: str
    inputs: tuple[str, ...]
    line_arrays: tuple[tuple[str, int], ...]
    outputs: tuple[tuple[str, Expr], ...]
    coefs: tuple[float, ...]
    shape: tuple[int, int, int]  # interior (nz, ny, nx)
    dtype: str = "float64"
    halo: tuple[int, int, int] = (0, 0, 0)
    meta: dict = field(default_factory=dict, compare=False, hash=False)

    # ---- derived facts -------------------------------------------------
    @property
    def ctype(self) -> str:
        return "double" if self.dtype == "float64" else "float"

    @property
    def itemsize(self) -> int:
        return np.dtype(self.dtype).itemsize

    @property
    def halo_shape(self) -> tuple[int, int, int]:
        """The logical extent with halo: what an input must provide."""
        return tuple(n + 2 * h for n, h in zip(self.shape, self.halo))  # type: ignore[return-value]

    @property
    def x0(self) -> int:
        """Offset of interior x = 0 in a row: the halo rounded up to 128 bytes."""
        a = 128 // self.itemsize
        return -(-self.halo[2] // a) * a

    @property
    def origin(self) -> tuple[int, int, int]:
        return self.halo[0], self.halo[1], self.x0

    @property
    def padded_shape(self) -> tuple[int, int, int]:
        """Shape of every 3-D array in memory (row pitch rounded up to 128 bytes)."""
        a = 128 // self.itemsize
        px = -(-(self.x0 + self.shape[2] + self.halo[2]) // a) * a
        return self.halo_shape[0], self.halo_shape[1], px

    @property
    def radius(self) -> int:
        return max(self.halo)

    def all_accesses(self) -> set[Access]:
        out: set[Access] = set()
        for _, e in self.outputs:
            out |= accesses(e)
        return out

    def all_lines(self) -> set[Line]:
        out: set[Line] = set()
        for _, e in self.outputs:
            out |= lines(e)
        return out

    @property
    def flops_per_point(self) -> int:
        return count_flops([e for _, e in self.outputs])

    def compulsory_bytes(self) -> int:
        """Bytes every implementation must move: each input read once, each output written once."""
        pz, py, px = self.halo_shape
        nz, ny, nx = self.shape
        read = len(self.inputs) * pz * py * px
        read += sum(self.halo_shape[a] for _, a in self.line_arrays)
        write = len(self.outputs) * nz * ny * nx
        return (read + write) * self.itemsize

    def flops(self) -> int:
        nz, ny, nx = self.shape
        return self.flops_per_point * nz * ny * nx

    def with_shape(self, shape: tuple[int, int, int]) -> Stencil:
        return Stencil(self.name, self.inputs, self.line_arrays, self.outputs, self.coefs,
                       tuple(shape), self.dtype, self.halo, dict(self.meta))  # type: ignore[arg-type]

    # ---- data and reference ---------------------------------------------
    def make_data(self, seed: int = 0) -> dict[str, np.ndarray]:
        """Inputs with values in [0.5, 1.5): no cancellations that defeat a relative tolerance."""
        rng = np.random.default_rng(seed)
        data: dict[str, np.ndarray] = {}
        for name in self.inputs:
            data[name] = (0.5 + rng.random(self.padded_shape)).astype(self.dtype)
        for name, axis in self.line_arrays:
            data[name] = (0.5 + rng.random(self.halo_shape[axis])).astype(self.dtype)
        return data

    def reference(self, data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Interior values of every output, computed with NumPy in the stencil's dtype."""
        nz, ny, nx = self.shape
        hz, hy, _ = self.halo
        hx = self.x0
        coefs = np.asarray(self.coefs, dtype=self.dtype)
        n = (nz, ny, nx)
        h = self.halo

        def leaf(e: Expr):  # type: ignore[no-untyped-def]
            if isinstance(e, Access):
                a = data[e.array]
                return a[hz + e.dz:hz + e.dz + nz, hy + e.dy:hy + e.dy + ny, hx + e.dx:hx + e.dx + nx]
            if isinstance(e, Line):
                v = data[e.array][h[e.axis] + e.d:h[e.axis] + e.d + n[e.axis]]
                shape = [1, 1, 1]
                shape[e.axis] = n[e.axis]
                return v.reshape(shape)
            return coefs[e.index]  # type: ignore[attr-defined]

        memo: dict = {}
        out = {}
        for name, e in self.outputs:
            r = evaluate(e, leaf, memo)
            out[name] = np.broadcast_to(np.asarray(r, dtype=self.dtype), n).copy()
        return out

    def reference_at(self, data: dict[str, np.ndarray], points: tuple[np.ndarray, np.ndarray, np.ndarray]
                     ) -> dict[str, np.ndarray]:
        """Reference values at interior points ``(iz, iy, ix)`` only: checks paper-size grids cheaply."""
        h = self.halo
        o = self.origin
        coefs = np.asarray(self.coefs, dtype=self.dtype)

        def leaf(e: Expr):  # type: ignore[no-untyped-def]
            if isinstance(e, Access):
                return data[e.array][points[0] + o[0] + e.dz, points[1] + o[1] + e.dy, points[2] + o[2] + e.dx]
            if isinstance(e, Line):
                return data[e.array][points[e.axis] + h[e.axis] + e.d]
            return coefs[e.index]  # type: ignore[attr-defined]

        memo: dict = {}
        return {name: np.broadcast_to(np.asarray(evaluate(e, leaf, memo), dtype=self.dtype),
                                      points[0].shape).copy() for name, e in self.outputs}


def make_stencil(name: str, inputs: list[str], outputs: Mapping[str, Callable[[Accessor], Expr] | Expr],
                 *, coefs: list[float], shape: tuple[int, int, int], dtype: str = "float64",
                 line_arrays: list[tuple[str, int]] | None = None, meta: dict | None = None) -> Stencil:
    """Build a ``Stencil``; the halo is derived from the offsets the formulas use."""
    g = Accessor()
    outs = tuple((k, v(g) if callable(v) else v) for k, v in outputs.items())
    halo = [0, 0, 0]
    for _, e in outs:
        for a in accesses(e):
            for ax, d in enumerate((a.dz, a.dy, a.dx)):
                halo[ax] = max(halo[ax], abs(d))
        for ln in lines(e):
            halo[ln.axis] = max(halo[ln.axis], abs(ln.d))
        for a in accesses(e):
            if a.array not in inputs:
                raise ValueError(f"formula of {name!r} reads {a.array!r}, which is not in inputs={inputs}")
    return Stencil(name, tuple(inputs), tuple(line_arrays or ()), outs, tuple(float(c) for c in coefs),
                   tuple(shape), dtype, tuple(halo), dict(meta or {}))  # type: ignore[arg-type]
