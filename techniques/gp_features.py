"""Extra inputs for the Gaussian process: what an index scale cannot say about integer levels.

Why: a GP over each parameter's value index (Willemsen et al., PMBS 2021;
``space.to_unit``) assumes that neighbouring levels perform alike.  On GPUs
they often do not: a thread-block width of 32 or 64 can run several times
faster than 48, its neighbour on the index axis, because warps and
wavefronts, shift-based indexing, memory transactions and shared-memory
banks all come in powers of two.  A stationary kernel over the index
smooths exactly that contrast away, and the search keeps measuring the
neighbours of a good power of two.  Two columns per integer parameter give
the kernel the structure directly, learned per parameter by its ARD
length-scales like any other input (an irrelevant column gets a long
length-scale and drops out):

* 1.0 where the level is a power of two, else 0.0;
* the level's number of factors of two (its 2-adic valuation), scaled to
  [0, 1] over the parameter's levels: 96 shares 32's alignment, 48 only 16's.

Only parameters whose levels are positive integers (at least three of them,
at most ``MAX_LEVELS``) get columns, and a column that is constant over the levels (all powers of
two, say, or all odd) is left out, so a space without such parameters sees
the plain unit-cube inputs.  Measured on the replay spaces, with the rule
written first, in docs/TECHNIQUES.md ("Powers of two as GP inputs").
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["FEATURES", "MAX_LEVELS", "divisibility_columns", "twos"]

#: the ``features`` choices of :class:`techniques.bayes_opt.BayesOpt`
FEATURES: tuple[str, ...] = ("unit", "divisibility")
#: a parameter with more levels than this gets no column, so that its levels need not be listed (an Integer
#: over 1..10^6 would cost a table of a million entries); GPU launch and tiling parameters have far fewer
MAX_LEVELS = 4096


def twos(v: int) -> int:
    """Factors of two in the positive integer ``v`` (its 2-adic valuation): twos(48) == 4."""
    if v <= 0:
        raise ValueError(f"twos: v must be a positive integer, got {v!r}")
    return (v & -v).bit_length() - 1


def _levels(param: Any) -> Sequence[Any] | None:
    n = getattr(param, "cardinality", None)
    if not isinstance(n, (int, np.integer)) or n < 3 or n > MAX_LEVELS or not hasattr(param, "value_at"):
        return None
    return [param.value_at(i) for i in range(int(n))]


def divisibility_columns(space: Any) -> list[tuple[str, dict[Any, float]]]:
    """(parameter name, value -> column value) for every extra column of ``space``, in parameter order."""
    cols: list[tuple[str, dict[Any, float]]] = []
    for param in space.params:
        values = _levels(param)
        if values is None or not all(isinstance(v, (int, np.integer)) and not isinstance(v, (bool, np.bool_))
                                     and v > 0 for v in values):
            continue
        pow2 = {v: float(int(v) & (int(v) - 1) == 0) for v in values}
        count = {v: float(twos(int(v))) for v in values}
        lo, hi = min(count.values()), max(count.values())
        if len(set(pow2.values())) > 1:
            cols.append((param.name, pow2))
        if hi > lo:
            cols.append((param.name, {v: (c - lo) / (hi - lo) for v, c in count.items()}))
    return cols
