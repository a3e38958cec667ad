"""Session 32 candidate: the default ensemble whose failure forest also reads products of the values.

``feasibility="products"`` (techniques/feasibility.py): the calibrated forest of today's default plus, per
numeric parameter, log(value), the sum and difference of each pair of logs, the sum of all of them and the
power of two dividing each value.  Judged by ``rule.md`` beside this file, written before any run.  Nothing
is fitted to a space.
"""

from __future__ import annotations

from typing import Any, ClassVar

from techniques.default import DefaultEnsemble


class Products(DefaultEnsemble):
    """``DefaultEnsemble(feasibility="products")`` under a name of its own."""

    name: ClassVar[str] = "default-products"

    def __init__(self, **options: Any) -> None:
        options.setdefault("feasibility", "products")
        super().__init__(**options)
