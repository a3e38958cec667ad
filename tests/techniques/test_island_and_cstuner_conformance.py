"""The techniques conformance checks (tests/techniques/test_conformance.py) for IslandGA, CsTuner and cstuner-ensemble."""

from __future__ import annotations

import math

import pytest

from ensemble.space import Float, Integer, SearchSpace
from tests.techniques.test_conformance import (
    failing_objective,
    mixed_objective,
    mixed_space,
    run,
)

MINE = ["IslandGA", "CsTuner", "cstuner-ensemble"]


@pytest.mark.parametrize("name", MINE)
def test_valid_proposals_and_budget(name: str) -> None:
    space = mixed_space()
    for batch in (1, 5):
        log = run(name, space, mixed_objective, budget=60, seed=3, batch=batch)
        assert log.proposals
        assert all(space.is_valid(c) for c in log.proposals)
        assert max(log.batch_sizes) <= batch
        assert log.unique <= 60 and math.isfinite(log.best_value)


@pytest.mark.parametrize("name", MINE)
def test_seeded_trajectories(name: str) -> None:
    space = mixed_space()
    a = run(name, space, mixed_objective, budget=40, seed=11)
    b = run(name, space, mixed_objective, budget=40, seed=11)
    c = run(name, space, mixed_objective, budget=40, seed=12)
    assert a.hashes == b.hashes and a.hashes != c.hashes


@pytest.mark.parametrize("name", MINE)
def test_mostly_failing_space(name: str) -> None:
    log = run(name, mixed_space(), failing_objective, budget=80, seed=5)
    assert math.isfinite(log.best_value)


@pytest.mark.parametrize("name", MINE)
def test_small_space_ends(name: str) -> None:
    space = SearchSpace().add(Integer("a", 0, 3), Integer("b", 0, 1))
    space.require("a != 2")
    log = run(name, space, lambda c: c["a"] + c["b"], budget=50, seed=1)
    assert log.unique <= 6 and log.best_value == 0.0


@pytest.mark.parametrize("name", MINE)
def test_continuous_progress(name: str) -> None:
    space = SearchSpace().add(*[Float(f"x{i}", -2.0, 2.0) for i in range(3)])
    log = run(name, space, lambda c: sum((c[f"x{i}"] - 0.5) ** 2 for i in range(3)), budget=150, seed=2)
    assert log.best_value < next(t.value for t in log.trials) and log.best_value < 0.5
