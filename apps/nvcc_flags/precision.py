"""CPU model of ``programs/precision.cu``, the nvcc tuner's planted miscompile.

:func:`precision_output` computes, in NumPy float32 (IEEE, subnormals kept),
the exact array the program writes when nvcc compiles it with its defaults,
and the array it writes when a value-unsafe flag takes effect:

* ``ftz=True`` (``--ftz=true``, implied by ``--use_fast_math``): the subnormal
  intermediate of part 1 is flushed to zero, so part 1 is all zeros (part 2
  has no subnormals and is unchanged);
* ``div_ulps=k`` (``--prec-div=false`` or ``--use_fast_math``): a model of an
  approximate division, every quotient of the elements ``i % 3 == 0`` moved
  ``k`` ulps away from the correctly rounded one (div.full.f32 is within 2
  ulps; which quotients it misses is the hardware's, not modelled).

Why: there is no GPU on the development machine or in CI, so the tests show
the detection path on the CPU: the runtime objective's output check
(:meth:`NvccEvaluator.check`) given the two outputs.  On a GPU the test of
the real program also checks that its -O3 output equals this model.
"""

from __future__ import annotations

import numpy as np

__all__ = ["bench_units", "precision_output"]

_MASK = (1 << 64) - 1


def bench_units(count: int) -> np.ndarray:
    """The first ``count`` values of ``bench_unit()`` in programs/common.cuh (xorshift64*, 24-bit floats)."""
    state = 88172645463325252
    out = np.empty(count, dtype=np.float32)
    for i in range(count):
        state ^= state >> 12
        state ^= (state << 25) & _MASK
        state ^= state >> 27
        out[i] = np.float32((((state * 2685821657736338717) & _MASK) >> 40) * (1.0 / 16777216.0))
    return out


def precision_output(n: int, *, ftz: bool = False, div_ulps: int = 0) -> np.ndarray:
    """The float32 array ``precision.cu`` writes for size ``n`` (2n values), under the given flag effects."""
    u = bench_units(3 * n)
    one = np.float32(1.0)
    x = one + u[:n]
    a = one + u[n::2]
    b = one + u[n + 1::2]
    with np.errstate(under="ignore"):
        t = x * np.float32(2.0 ** -127)  # subnormal: IEEE keeps it, FTZ makes it 0
    if ftz:
        t = np.zeros_like(t)
    y = t * np.float32(2.0 ** 127)
    q = a / b  # correctly rounded, as div.rn.f32
    if div_ulps:
        sel = np.arange(n) % 3 == 0
        for _ in range(abs(div_ulps)):
            q[sel] = np.nextafter(q[sel], np.float32(np.inf if div_ulps > 0 else -np.inf))
    # fmaf(-q, b, a): q*b is exact in float64 (24 + 24 bits) and a - q*b is exact (Sterbenz), one rounding
    r = (a.astype(np.float64) - q.astype(np.float64) * b.astype(np.float64)).astype(np.float32)
    residual = (r / a) * np.float32(16777216.0)
    return np.concatenate([y, residual]).astype(np.float32)
