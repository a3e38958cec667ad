"""``opentuner.search``: manipulator and parameters, objectives, technique registration."""

from ensemble.compat.opentuner.search import manipulator, objective, technique

__all__ = ["manipulator", "objective", "technique"]
