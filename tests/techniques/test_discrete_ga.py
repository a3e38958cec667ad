"""Behaviour of DiscreteGA: budget rule, mutation steps, duplicate avoidance, restarts."""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import numpy as np
import pytest

from ensemble.errors import TechniqueError
from ensemble.space import Enum, Integer, SearchSpace
from techniques.discrete_ga import DiscreteGA, population_for_budget
from techniques.random_search import Random
from tests.techniques.driven import run_technique


def ordinal_space(dims: int = 6, values: int = 10) -> SearchSpace:
    s = SearchSpace()
    s.add(*(Integer(f"x{i}", 0, values - 1) for i in range(dims)))
    return s


def separable(c: dict[str, Any]) -> float:
    """Optimum 0 at x_i = 3 for every i; each coordinate counts on its own."""
    return float(sum(abs(v - 3) for v in c.values()))


def test_population_follows_the_budget_rule() -> None:
    assert population_for_budget(None) == 20
    assert population_for_budget(5000) == 20
    assert population_for_budget(120) == 12
    assert population_for_budget(37) == 4
    assert population_for_budget(5) == 4
    ga = DiscreteGA(seed=0)
    ga.bind(ordinal_space(), budget=80, rng=np.random.default_rng(0))
    assert ga.population == 8
    assert ga.mutation == pytest.approx(1 / 6)


def test_single_valued_parameters_do_not_dilute_the_mutation_rate() -> None:
    s = ordinal_space(dims=2)
    s.add(Enum("fixed_a", [1]), Enum("fixed_b", ["only"]))
    ga = DiscreteGA(seed=0)
    ga.bind(s, budget=None, rng=np.random.default_rng(0))
    assert ga.mutation == pytest.approx(0.5)


def test_index_steps_are_mostly_neighbours_and_sometimes_two() -> None:
    ga = DiscreteGA(seed=1)
    ga.bind(ordinal_space(dims=1, values=41), budget=None, rng=np.random.default_rng(1))
    steps = Counter()
    for _ in range(4000):
        g = [20]
        ga._mutate_gene(g, 0, rate_redraw=0.0)
        steps[abs(g[0] - 20)] += 1
    assert 0 not in steps  # a mutation always changes the gene
    assert steps[1] / 4000 == pytest.approx(0.5, abs=0.04)  # P(j) = 2^-j
    assert steps[2] / 4000 == pytest.approx(0.25, abs=0.04)
    assert steps[1] > steps[2] > steps[3]


def test_mutation_at_the_edge_stays_in_range_and_moves() -> None:
    ga = DiscreteGA(seed=2)
    ga.bind(ordinal_space(dims=1, values=2), budget=None, rng=np.random.default_rng(2))
    for start in (0, 1):
        for _ in range(50):
            g = [start]
            ga._mutate_gene(g, 0)
            assert g == [1 - start]


@pytest.mark.parametrize("survivors", ["plus", "generational", "crowding"])
def test_no_configuration_is_proposed_twice(survivors: str) -> None:
    ga = DiscreteGA(seed=3, survivors=survivors)
    log = run_technique(ga, ordinal_space(dims=3, values=6), separable, budget=150, seed=3)
    hashes = [t.config_hash for t in log.trials]
    assert len(hashes) == len(set(hashes)) == 150
    assert not any(t.duplicate for t in log.trials)


def test_collapsed_population_restarts_and_keeps_the_best() -> None:
    # 64 points: the population settles on the optimum and stops changing before the budget ends
    ga = DiscreteGA(seed=4, population=6)
    log = run_technique(ga, ordinal_space(dims=2, values=8), separable, budget=60, seed=4)
    assert ga.patience == 2  # ceil(2 * log2(8) / 4)
    assert ga.cataclysms >= 1
    assert log.best_value == 0.0
    assert log.unique == 60


def test_beats_random_search_on_a_separable_ordinal_space() -> None:
    ga_best, rnd_best = [], []
    for seed in range(5):
        space = ordinal_space()
        ga_best.append(run_technique(DiscreteGA(seed=seed), space, separable, budget=300, seed=seed).best_value)
        rnd_best.append(run_technique(Random(seed=seed), space, separable, budget=300, seed=seed).best_value)
    assert np.median(ga_best) < np.median(rnd_best)
    assert np.median(ga_best) <= 1.0


def test_generational_replacement_keeps_the_elite() -> None:
    ga = DiscreteGA(seed=5, population=6, survivors="generational")
    log = run_technique(ga, ordinal_space(dims=4, values=8), separable, budget=120, seed=5)
    assert math.isfinite(log.best_value)
    assert log.best_value <= 2.0


def _genes_shared_with_optimum(seed: int, migrate: bool) -> float:
    from ensemble.technique import Trial

    space = ordinal_space(dims=4, values=8)
    ga = DiscreteGA(seed=seed, population=6)
    ga.bind(space, budget=None, rng=np.random.default_rng(seed))
    for c in ga.propose(6):
        ga.observe(Trial(config=c, config_hash=ga.hash(c), value=separable(c) + 10, state="OK",
                         technique="DiscreteGA"))
    optimum = {f"x{i}": 3 for i in range(4)}
    if migrate:
        ga.observe_foreign(Trial(config=optimum, config_hash=ga.hash(optimum), value=0.0, state="OK",
                                 technique="other"))
    return float(np.mean([sum(k[n] == 3 for n in optimum) for k in ga.propose(5)]))


def test_ensemble_best_migrates_into_the_population() -> None:
    with_best = np.mean([_genes_shared_with_optimum(seed, True) for seed in range(20)])
    without = np.mean([_genes_shared_with_optimum(seed, False) for seed in range(20)])
    # children bred from the migrated optimum inherit its genes
    assert with_best > without + 0.5


@pytest.mark.parametrize("bad", [{"population": 1}, {"crossover": 1.5}, {"mutation": 0.0},
                                 {"tournament": 0}, {"survivors": "steady"}, {"colour": "red"}])
def test_bad_options_name_the_argument(bad: dict[str, Any]) -> None:
    with pytest.raises(TechniqueError, match=next(iter(bad))):
        DiscreteGA(seed=0, **bad)
