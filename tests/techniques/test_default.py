"""The default ensemble: its arms, and the continuous-only local-refinement arm."""

from __future__ import annotations

import numpy as np

from ensemble.registry import create_technique
from ensemble.space import Enum, Float, Integer, SearchSpace
from techniques.default import DEFAULT_ARMS, DefaultEnsemble
from tests.techniques.driven import run_technique


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


def test_the_model_leads_on_a_discrete_space() -> None:
    """Every proposal on an all-discrete space is the GP's while it is active (docs/TECHNIQUES.md, round 4)."""
    space = SearchSpace().add(Integer("a", 0, 30), Integer("b", 0, 20), Enum("c", ["x", "y", "z"]))
    t = create_technique("default", seed=4)
    log = run_technique(t, space, lambda c: (c["a"] - 7) ** 2 + abs(c["b"] - 3) + (c["c"] != "y"),
                        budget=50, seed=4)
    assert t.model_led and t.state_dict()["model_led"] is True
    assert {tr.technique for tr in log.trials} == {"BayesOpt"}
    assert len({tr.config_hash for tr in log.trials}) == 50
    assert log.best_value == 0.0


def test_the_bandit_shares_trials_on_a_continuous_space_or_when_told() -> None:
    mixed = SearchSpace().add(Float("x", -1.0, 1.0), Integer("k", 0, 9))
    t = create_technique("default", seed=5)
    log = run_technique(t, mixed, lambda c: c["x"] ** 2 + c["k"], budget=80, seed=5)
    assert not t.model_led
    assert len({tr.technique for tr in log.trials}) >= 2  # the bandit explores more than one arm

    discrete = SearchSpace().add(Integer("a", 0, 30), Integer("b", 0, 20))
    forced = DefaultEnsemble(seed=6, model_led=False)
    log = run_technique(forced, discrete, lambda c: abs(c["a"] - 7) + abs(c["b"] - 3), budget=60, seed=6)
    assert not forced.model_led
    assert len({tr.technique for tr in log.trials}) >= 2


def test_model_led_must_be_a_bool_or_none() -> None:
    import pytest

    from ensemble.errors import TechniqueError

    with pytest.raises(TechniqueError, match="model_led must be None"):
        DefaultEnsemble(model_led="no")


def test_fill_is_off_by_default_and_an_option() -> None:
    """The fill technique failed one part of its screen (docs/BENCHMARKS.md, "Filling the queue"): off unless asked."""
    from ensemble.registry import create_technique

    assert create_technique("default", seed=0).fill is None
    on = create_technique("default", seed=0, fill="NormalGreedyMutation")
    assert on.fill is not None and on.fill.name == "NormalGreedyMutation"
