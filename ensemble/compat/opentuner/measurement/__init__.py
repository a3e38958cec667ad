"""``opentuner.measurement``: the MeasurementInterface apps subclass."""

from ensemble.compat.opentuner.measurement import interface
from ensemble.compat.opentuner.measurement.interface import (
    DefaultMeasurementInterface,
    MeasurementInterface,
)

__all__ = ["DefaultMeasurementInterface", "MeasurementInterface", "interface"]
