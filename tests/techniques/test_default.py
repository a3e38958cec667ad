"""The default ensemble: its arms, and the continuous-only local-refinement arm."""

from __future__ import annotations

import numpy as np

from ensemble.registry import create_technique
from ensemble.space import Enum, Float, Integer, SearchSpace
from techniques.default import DEFAULT_ARMS, DefaultEnsemble
from tests.techniques.harness import run_technique


def test_registry_default_is_the_measured_bandit() -> None:
    t = create_technique("default", seed=1)
    assert isinstance(t, DefaultEnsemble)
    assert t.labels == list(DEFAULT_ARMS)


def test_nelder_mead_sits_out_purely_discrete_spaces() -> None:
    space = SearchSpace().add(Integer("a", 0, 30), Enum("b", ["x", "y", "z"]))
    t = create_technique("default")
    log = run_technique(t, space, lambda c: abs(c["a"] - 7) + (c["b"] != "y"), budget=60, seed=3)
    assert "NelderMead" not in {tr.technique for tr in log.trials}
    assert log.best_value == 0.0


def test_nelder_mead_polishes_a_continuous_bowl() -> None:
    space = SearchSpace().add(*[Float(f"x{i}", -3.0, 3.0) for i in range(3)], Integer("k", 0, 3))
    t = create_technique("default")
    log = run_technique(t, space, lambda c: sum((c[f"x{i}"] - 1.0) ** 2 for i in range(3)) + c["k"],
                        budget=600, seed=2)
    assert "NelderMead" in {tr.technique for tr in log.trials}
    assert log.best_value < 1e-6
    assert np.isfinite(log.best_value)
