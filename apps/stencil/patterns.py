"""Garvey and Abdelrahman's synthetic stencil family.

Why: their study (Garvey & Abdelrahman, "Automatic performance tuning of
stencil computations on GPUs", ICPP 2015) tunes 104 synthetic single-array
stencils that vary only in shape, dimensionality and radius, so that what
the tuner learns is about the access pattern.  We generate the same kinds:

* ``star``: the axes, ``|d| <= r`` on one axis at a time;
* ``box`` (dense): every point of the ``(2r+1)^d`` cube;
* ``diamond``: ``|dx| + |dy| + |dz| <= r``;
* ``nocorners``: the box without its ``2^d`` corners;
* ``thumbtack``: a flat box head in the lower dimensions plus a one-sided pin
  of length ``r`` along the last used axis (our reading of the paper's name:
  head and pin).

``dims`` (1, 2, 3) says how many axes the pattern spans and ``unique`` which
axis is the odd one out (Garvey & Abdelrahman 2018, Sec. 6.1 "unique
dimension"; Sec. 7.1: 1-D and 2-D stencils are generated in every
orientation of the 3-D arrays): a 1-D pattern lies along ``unique``, a 2-D
one spans the two other axes, a 3-D thumbtack has its pin along ``unique``.
The defaults (1-D along x, 2-D in the x-y plane, pin along z) are the
orientations this module always produced.  The arrays are always 3-D.
Weights are random, nonzero, seeded.
"""

from __future__ import annotations

import itertools

import numpy as np

from apps.stencil.expr import Access, Coef, Expr, total
from apps.stencil.spec import Stencil, make_stencil

__all__ = ["PATTERNS", "default_unique", "pattern_offsets", "synthetic"]

PATTERNS = ("star", "box", "diamond", "nocorners", "thumbtack")
_AXIS = {"x": 2, "y": 1, "z": 0}


def default_unique(pattern: str, dims: int) -> str | None:
    """The orientation used when none is given (the module's historical one)."""
    if dims == 1:
        return "x"
    if dims == 2:
        return "z"
    return "z" if pattern == "thumbtack" else None


def _used_axes(pattern: str, dims: int, unique: str | None) -> list[int]:
    """Array axes (0 = z, 1 = y, 2 = x) the pattern spans, x first; the pin axis last for thumbtacks."""
    if unique is not None and unique not in _AXIS:
        raise ValueError(f"unique={unique!r} must be 'x', 'y', 'z' or None")
    if dims == 1:
        return [_AXIS[unique or "x"]]
    if dims == 2:
        odd = _AXIS[unique or "z"]
        return [a for a in (2, 1, 0) if a != odd]
    if pattern == "thumbtack":
        pin = _AXIS[unique or "z"]
        return [a for a in (2, 1, 0) if a != pin] + [pin]
    if unique is not None:
        raise ValueError(f"unique={unique!r}: a 3-D {pattern} is symmetric; leave unique=None")
    return [2, 1, 0]


def pattern_offsets(pattern: str, dims: int, radius: int,
                    unique: str | None = None) -> list[tuple[int, int, int]]:
    """Offsets ``(dz, dy, dx)`` of a pattern, sorted, centre included."""
    if pattern == "dense":
        pattern = "box"
    if pattern not in PATTERNS:
        raise ValueError(f"pattern={pattern!r} is unknown; use one of {PATTERNS}")
    if dims not in (1, 2, 3):
        raise ValueError(f"dims={dims} must be 1, 2 or 3")
    if not 0 <= radius <= 5:
        raise ValueError(f"radius={radius} must be between 0 and 5")
    r = radius
    rng = range(-r, r + 1)
    used = _used_axes(pattern, dims, unique)
    pts: set[tuple[int, int, int]] = set()
    for combo in itertools.product(rng, repeat=dims):
        off = [0, 0, 0]
        for ax, d in zip(used, combo):
            off[ax] = d
        nz = [abs(d) for d in combo if d != 0]
        if pattern == "star":
            keep = len(nz) <= 1
        elif pattern == "box":
            keep = True
        elif pattern == "diamond":
            keep = sum(nz) <= r
        elif pattern == "nocorners":
            keep = r == 0 or not (len(nz) == dims and all(v == r for v in nz))
            keep = keep or dims == 1
        else:  # thumbtack: head = box in the lower dims at 0 on the last axis; pin on the last axis
            last = combo[-1]
            head = last == 0
            pin = all(c == 0 for c in combo[:-1]) and 0 < last <= r
            keep = head or pin
        if keep:
            pts.add(tuple(off))  # type: ignore[arg-type]
    return sorted(pts)


def synthetic(pattern: str, dims: int, radius: int, *, size: int | tuple[int, int, int] = 256,
              dtype: str = "float32", seed: int = 0, unique: str | None = None) -> Stencil:
    """One synthetic stencil: ``out = sum_i w_i * in[p + o_i]`` with random nonzero ``w_i``.

    ``unique`` picks the orientation (see the module docstring); a name
    suffix ``_x``/``_y``/``_z`` appears only for a non-default orientation.
    """
    offs = pattern_offsets(pattern, dims, radius, unique)
    rng = np.random.default_rng(seed)
    w = rng.uniform(0.1, 1.0, len(offs)) * rng.choice([-1.0, 1.0], len(offs))
    w = w / np.abs(w).sum()  # keep values O(1) so float32 relative errors stay small
    expr: Expr = total([Coef(i) * Access("in", dz, dy, dx) for i, (dz, dy, dx) in enumerate(offs)])
    shape = (size, size, size) if isinstance(size, int) else tuple(size)
    name = f"{pattern}{dims}d_r{radius}"
    if unique is not None and unique != default_unique(pattern, dims):
        name += f"_{unique}"
    return make_stencil(name, ["in"], {"out": expr}, coefs=list(w), shape=shape,  # type: ignore[arg-type]
                        dtype=dtype, meta={"pattern": pattern, "dims": dims, "offsets": offs,
                                                   "unique": unique or default_unique(pattern, dims)})
