"""csTuner (Sun et al., CLUSTER 2021): parameter grouping, grouped GA, approximate stopping.

The pure algorithms (grouping, stopping, group search, GA core) import only
numpy and DEAP; :class:`CsTuner` is the technique the registry names.
"""

from techniques.cstuner.group_search import GroupReport, GroupSearch
from techniques.cstuner.grouping import (
    deque_grouping,
    group_parameters,
    interaction_cvs,
)
from techniques.cstuner.stopping import ApproximateStop

__all__ = [
    "ApproximateStop",
    "CsTuner",
    "GroupReport",
    "GroupSearch",
    "deque_grouping",
    "group_parameters",
    "interaction_cvs",
]


def __getattr__(name: str) -> object:
    """``CsTuner`` is loaded on first use (it needs the technique base classes)."""
    if name == "CsTuner":
        from techniques.cstuner.technique import CsTuner

        return CsTuner
    raise AttributeError(name)
