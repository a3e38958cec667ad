"""Finite value lists per parameter: the index view the GA techniques search.

Discrete parameters give their values in order (their index view); Float
parameters are cut into ``float_levels`` evenly spaced levels of their unit
scale (log scale for LogFloat, through the parameter's own ``from_unit``);
very large discrete domains are thinned to ``max_values`` evenly spread values,
which keeps genomes and re-indexing cheap at the cost of resolution.
"""

from __future__ import annotations

from typing import Any

from ensemble.errors import TechniqueError

__all__ = ["space_domains"]


def space_domains(space: Any, *, float_levels: int = 64, max_values: int = 4096) -> dict[str, list[Any]]:
    """``{name: [values...]}`` for every parameter of ``space``, in space order."""
    out: dict[str, list[Any]] = {}
    for p in space.params:
        card = getattr(p, "cardinality", None)
        if card is None:
            out[p.name] = [p.from_unit([(i + 0.5) / float_levels]) for i in range(float_levels)]
            continue
        if type(p).__name__ == "Permutation" and card > max_values:
            raise TechniqueError(
                f"parameter {p.name!r} is a permutation of {card} orders; the GA techniques search "
                "index views: use GA/NelderMead for permutations or shorten the item list"
            )
        if card <= max_values:
            out[p.name] = [p.value_at(i) for i in range(card)]
        else:
            idx = sorted({round(i * (card - 1) / (max_values - 1)) for i in range(max_values)})
            out[p.name] = [p.value_at(i) for i in idx]
    return out
