"""Is a kernel's output right?  Compare it with a reference under a tolerance.

Why a norm-relative tolerance: stencil outputs such as a flux divergence are
differences of nearly equal numbers, so an element-wise relative error is
meaningless where the true value is near zero.  We accept
``|out - ref| <= atol + rtol * max|ref|`` everywhere (the max-norm test used
by Kernel Tuner's ``verify`` with ``atol`` scaled to the data), and reject
NaN or infinity outright.  Large grids may be checked on a seeded random
sample of points, which catches indexing errors (they corrupt whole planes)
at a fraction of the cost.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ensemble.errors import ConfigurationError

__all__ = ["Verdict", "compare", "default_rtol"]


@dataclass(frozen=True)
class Verdict:
    """Outcome of one comparison; ``detail`` says where it failed."""

    ok: bool
    max_abs_error: float
    scale: float
    detail: str


def default_rtol(dtype: np.dtype | str) -> float:
    """Tolerance for reordered floating-point sums: loose for float32, tight for float64."""
    return 1e-4 if np.dtype(dtype).itemsize <= 4 else 1e-10


def compare(output: np.ndarray, reference: np.ndarray, *, rtol: float | None = None, atol: float = 0.0,
            sample: int | None = None, seed: int = 0) -> Verdict:
    """Check ``output`` against ``reference`` (same shape) within ``atol + rtol * max|ref|``.

    ``sample``: check only this many seeded random points (None: all points).
    """
    if output.shape != reference.shape:
        raise ConfigurationError(
            f"compare(output=...) has shape {output.shape} but reference has {reference.shape}; "
            "pass the interior of the output array")
    if rtol is None:
        rtol = default_rtol(reference.dtype)
    out = output.reshape(-1)
    ref = reference.reshape(-1)
    if sample is not None and sample < out.size:
        idx = np.random.default_rng(seed).integers(0, out.size, sample)
        out, ref = out[idx], ref[idx]
    out64 = out.astype(np.float64)
    ref64 = ref.astype(np.float64)
    if not np.all(np.isfinite(out64)):
        bad = int(np.flatnonzero(~np.isfinite(out64))[0])
        return Verdict(False, float("inf"), 0.0, f"non-finite value at flat index {bad}")
    scale = float(np.max(np.abs(ref64))) if ref64.size else 0.0
    err = np.abs(out64 - ref64)
    worst = int(np.argmax(err)) if err.size else 0
    max_err = float(err[worst]) if err.size else 0.0
    limit = atol + rtol * scale
    if max_err <= limit:
        return Verdict(True, max_err, scale, "ok")
    return Verdict(False, max_err, scale,
                   f"max error {max_err:.3g} > {limit:.3g} at checked index {worst} "
                   f"(got {out64[worst]:.6g}, want {ref64[worst]:.6g})")
