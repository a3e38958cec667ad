"""OpenTuner's registered AUC-bandit ensembles, built from our techniques.

Why: an OpenTuner app run without ``--technique`` is tuned by OpenTuner's
``AUCBanditMetaTechniqueA``, and its author expects that search. The
compatibility layer (ensemble/compat/opentuner, docs/OPENTUNER.md) therefore
maps OpenTuner's three registered bandit ensembles, and the absence of
``--technique``, to these presets instead of our ``default`` ensemble.

Ansel et al., "OpenTuner: an extensible framework for program autotuning",
PACT 2014, section 4: an AUC bandit (window W = 500, exploration C = 0.05,
the constants of OpenTuner's bandit) over

* A: differential evolution with crossover rate 0.2 and a population of 30
  (OpenTuner's ``DifferentialEvolutionAlt``), uniform greedy mutation with
  mutation rate 0.1, normal greedy mutation with mutation rate 0.3 and
  sigma 0.1, and Nelder-Mead from a random start;
* B: the same differential evolution and uniform greedy mutation;
* C: the same differential evolution and pattern search.

Each arm is our technique of that name with OpenTuner's constants; the
algorithms themselves are ours, so a run reproduces OpenTuner's choice of
search, not its exact trajectory. Where they differ:

* mutation rates apply per unit-cube coordinate here, per parameter in
  OpenTuner (a permutation of k items is k coordinates here, one parameter
  there, which OpenTuner's uniform mutation re-shuffles whole);
* a permutation is searched as random keys (Bean 1994); OpenTuner's normal
  greedy mutation picks one of the parameter's own operators (shuffle, or
  swaps of neighbours with probability 0.25 each);
* our Nelder-Mead works in the unit cube over every parameter and restarts
  from the best known point; OpenTuner's ``RandomNelderMead`` starts from a
  random simplex over the primitive parameters only.

Unlike our ``default`` there is no model arm and no rule that leaves
Nelder-Mead out on spaces without a continuous parameter (OpenTuner's own
ensemble keeps it everywhere).
"""

from __future__ import annotations

from typing import Any, ClassVar

from ensemble.technique import Technique
from techniques.bandit import AUCBandit

__all__ = ["OpenTunerA", "OpenTunerB", "OpenTunerC"]

#: OpenTuner's bandit constants (window, exploration)
WINDOW, C = 500, 0.05


def _de() -> Technique:
    from techniques.differential_evolution import DifferentialEvolution

    return DifferentialEvolution(population=30, cr=0.2)


def _uniform_greedy() -> Technique:
    from techniques.greedy_mutation import GreedyMutation

    return GreedyMutation(rate=0.1)


def _normal_greedy() -> Technique:
    from techniques.greedy_mutation import NormalGreedyMutation

    return NormalGreedyMutation(rate=0.3, sigma=0.1)


def _nelder_mead() -> Technique:
    from techniques.nelder_mead import NelderMead

    return NelderMead()


def _pattern_search() -> Technique:
    from techniques.pattern_search import PatternSearch

    return PatternSearch()


class _OpenTunerBandit(AUCBandit):
    """An AUC bandit over a fixed list of arm factories (each instance gets fresh arms)."""

    arm_factories: ClassVar[tuple[Any, ...]] = ()

    def __init__(self, *, seed: int | None = None, window: int = WINDOW, c: float = C, **options: Any) -> None:
        super().__init__(seed=seed, arms=[make() for make in self.arm_factories], window=window, c=c, **options)


class OpenTunerA(_OpenTunerBandit):
    """OpenTuner's default (AUCBanditMetaTechniqueA): DE, uniform and normal greedy mutation, Nelder-Mead."""

    name: ClassVar[str] = "OpenTunerA"
    summary: ClassVar[str] = ("OpenTuner's default ensemble (AUCBanditMetaTechniqueA) from our DE, greedy "
                              "mutations and Nelder-Mead")
    arm_factories = (_de, _uniform_greedy, _normal_greedy, _nelder_mead)


class OpenTunerB(_OpenTunerBandit):
    """OpenTuner's AUCBanditMetaTechniqueB: DE and uniform greedy mutation."""

    name: ClassVar[str] = "OpenTunerB"
    summary: ClassVar[str] = "OpenTuner's AUCBanditMetaTechniqueB from our DE and greedy mutation"
    arm_factories = (_de, _uniform_greedy)


class OpenTunerC(_OpenTunerBandit):
    """OpenTuner's AUCBanditMetaTechniqueC: DE and pattern search."""

    name: ClassVar[str] = "OpenTunerC"
    summary: ClassVar[str] = "OpenTuner's AUCBanditMetaTechniqueC from our DE and pattern search"
    arm_factories = (_de, _pattern_search)
