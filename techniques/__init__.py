"""Search techniques and meta-techniques (see docs/TECHNIQUES.md).

Nothing is registered by importing this package: the drivers find techniques
through the ``ensemble.techniques`` entry points in setup.cfg ("name" -> "module:attr").  The public
classes are importable from here; they load on first access (PEP 562), so
``import techniques`` stays cheap and DEAP is imported only by the GA.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = [
    "GA",
    "PSO",
    "AUCBandit",
    "AUCWindow",
    "BaseTechnique",
    "DefaultEnsemble",
    "DifferentialEvolution",
    "GreedyILS",
    "GreedyMutation",
    "MetaTechnique",
    "NelderMead",
    "NormalGreedyMutation",
    "PatternSearch",
    "Random",
    "RoundRobin",
    "SequentialTechnique",
    "SimulatedAnnealing",
    "Torczon",
]

_WHERE = {
    "AUCBandit": "techniques.bandit",
    "AUCWindow": "techniques.bandit",
    "BaseTechnique": "techniques.base",
    "DefaultEnsemble": "techniques.default",
    "DifferentialEvolution": "techniques.differential_evolution",
    "GA": "techniques.ga",
    "GreedyILS": "techniques.local_search",
    "GreedyMutation": "techniques.greedy_mutation",
    "MetaTechnique": "techniques.meta",
    "NelderMead": "techniques.nelder_mead",
    "NormalGreedyMutation": "techniques.greedy_mutation",
    "PSO": "techniques.pso",
    "PatternSearch": "techniques.pattern_search",
    "Random": "techniques.random_search",
    "RoundRobin": "techniques.round_robin",
    "SequentialTechnique": "techniques.base",
    "SimulatedAnnealing": "techniques.annealing",
    "Torczon": "techniques.torczon",
}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'techniques' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
