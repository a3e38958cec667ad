"""Tests of the SMAC-style surrogate technique (techniques/surrogate.py).

Why: the conformance suite checks the contract (valid proposals, budget,
reproducibility); these check that the model actually pays (it beats random
search on a smooth discrete function at equal budget) and that the
acquisition function is the expected improvement of Jones et al. (1998).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ensemble.registry import create_technique
from ensemble.space import Enum, Integer, PowerOfTwo, SearchSpace
from techniques.surrogate import SurrogateForest, expected_improvement
from tests.techniques.driven import run_technique


def smooth_space() -> SearchSpace:
    s = SearchSpace()
    s.add(Integer("a", 0, 15), Integer("b", 0, 15), PowerOfTwo("c", 1, 64), Integer("d", 0, 9),
          Enum("e", ["x", "y", "z"]))
    s.require("a + b <= 24")
    return s


def smooth_objective(c: dict) -> float:
    """A smooth bowl in the index view, positive (a run time), optimum 1.0 at a=11, b=4, c=8, d=6, e=y."""
    return (1.0 + 0.05 * (c["a"] - 11) ** 2 + 0.08 * (c["b"] - 4) ** 2
            + 0.3 * (math.log2(c["c"]) - 3) ** 2 + 0.1 * (c["d"] - 6) ** 2
            + {"x": 0.5, "y": 0.0, "z": 0.8}[c["e"]])


def test_registered_and_summary() -> None:
    t = create_technique("Surrogate", seed=1)
    assert isinstance(t, SurrogateForest)
    assert t.summary and "\n" not in t.summary


def test_beats_random_on_a_smooth_discrete_function() -> None:
    space = smooth_space()
    budget = 60
    ours, rand = [], []
    for seed in range(10):
        ours.append(run_technique(create_technique("Surrogate"), space, smooth_objective,
                                  budget=budget, seed=seed).best_value)
        rand.append(run_technique(create_technique("Random"), space, smooth_objective,
                                  budget=budget, seed=seed).best_value)
    assert np.mean(ours) < np.mean(rand)
    assert sum(o < r for o, r in zip(ours, rand)) >= 7, (ours, rand)


def test_expected_improvement_hand_computed() -> None:
    # best 1.0, mu 0.5, sigma 0.5: z = 1, EI = 0.5 * Phi(1) + 0.5 * phi(1)
    phi1 = math.exp(-0.5) / math.sqrt(2 * math.pi)       # 0.2419707
    cdf1 = 0.5 * (1 + math.erf(1 / math.sqrt(2)))        # 0.8413447
    ei = expected_improvement(np.array([0.5, 2.0, 0.3, 1.0]), np.array([0.5, 0.0, 0.0, 1.0]), best=1.0)
    assert ei[0] == pytest.approx(0.5 * cdf1 + 0.5 * phi1, rel=1e-9)
    assert ei[0] == pytest.approx(0.5416577, abs=1e-6)
    assert ei[1] == 0.0                                  # no spread, worse mean: no improvement
    assert ei[2] == pytest.approx(0.7)                   # no spread, better mean: the improvement itself
    assert ei[3] == pytest.approx(1.0 / math.sqrt(2 * math.pi))  # mu == best: z = 0, EI = sigma * phi(0)


def test_batch_proposals_are_distinct_and_unseen() -> None:
    space = smooth_space()
    log = run_technique(create_technique("Surrogate"), space, smooth_objective, budget=60, seed=4, batch=6)
    assert all(space.is_valid(c) for c in log.proposals)
    assert log.unique == 60
    hashes = [space.config_hash(c) for c in log.proposals]
    assert len(hashes) == len(set(hashes))  # never proposes a configuration twice


def test_all_failing_space_does_not_hang() -> None:
    space = smooth_space()
    log = run_technique(create_technique("Surrogate"), space, lambda c: math.inf, budget=30, seed=2)
    assert log.unique == 30
    assert all(space.is_valid(c) for c in log.proposals)


def test_explore_option() -> None:
    from ensemble.errors import TechniqueError

    space = smooth_space()
    log = run_technique(create_technique("Surrogate", explore="global"), space, smooth_objective,
                        budget=40, seed=3)
    assert log.unique == 40 and all(space.is_valid(c) for c in log.proposals)
    with pytest.raises(TechniqueError):
        create_technique("Surrogate", explore="sideways")
    with pytest.raises(TechniqueError):
        create_technique("Surrogate", no_such_option=1)
