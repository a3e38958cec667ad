"""csTuner (Sun et al., IEEE CLUSTER 2021) as the paper describes it.

Pure algorithms (Algorithm 1 grouping, Algorithm 2 metric combination, Eq. 3
PMNF models and guided sampling, approximate stopping, the group search) in
small modules; :class:`CsTuner` is the technique the registry names and
:class:`CsTunerEnsemble` the design-card preset ``cstuner-ensemble``.
"""

from techniques.cstuner.group_search import GroupReport, GroupSearch
from techniques.cstuner.grouping import algorithm1, dataset_cvs, sorted_deque
from techniques.cstuner.metrics import algorithm2, combine_metrics
from techniques.cstuner.pmnf import PMNFModel, fit_pmnf, guided_sample
from techniques.cstuner.stopping import ApproximateStop

__all__ = [
    "ApproximateStop",
    "CsTuner",
    "CsTunerEnsemble",
    "GroupReport",
    "GroupSearch",
    "PMNFModel",
    "algorithm1",
    "algorithm2",
    "combine_metrics",
    "dataset_cvs",
    "fit_pmnf",
    "guided_sample",
    "sorted_deque",
]


def __getattr__(name: str) -> object:
    """``CsTuner`` and ``CsTunerEnsemble`` load on first use (they need the technique bases)."""
    if name == "CsTuner":
        from techniques.cstuner.technique import CsTuner

        return CsTuner
    if name == "CsTunerEnsemble":
        from techniques.cstuner.ensemble import CsTunerEnsemble

        return CsTunerEnsemble
    raise AttributeError(name)
