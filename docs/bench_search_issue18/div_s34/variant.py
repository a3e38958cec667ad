"""Session 34: the default ensemble as it was before ``MODEL_FEATURES`` (the GP on the unit-cube inputs only)."""

from typing import Any, ClassVar

from techniques.default import DefaultEnsemble


class Unit(DefaultEnsemble):
    """The previous default of record: ``model_features="unit"``."""

    name: ClassVar[str] = "default_unit"

    def __init__(self, **options: Any) -> None:
        super().__init__(model_features="unit", **options)
