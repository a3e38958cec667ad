"""The default ensemble: its arms, and the continuous-only local-refinement arm."""

from __future__ import annotations

import numpy as np

from ensemble.registry import create_technique
from ensemble.space import Enum, Float, Integer, SearchSpace
from techniques.default import DEFAULT_ARMS, DEFAULT_PARTNER, DefaultEnsemble
from tests.techniques.driven import run_technique


def test_registry_default_is_the_measured_bandit() -> None:
    t = create_technique("default", seed=1)
    assert isinstance(t, DefaultEnsemble)
    assert t.labels == [*DEFAULT_ARMS, "TPE"]
    assert t.feasibility_kind == "calibrated"  # the failure model adopted with the partner (session 30)


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
    """Every proposal on an all-discrete space is a leader's (the GP or its partner) while the GP is active.

    (docs/TECHNIQUES.md, round 4; the partner: "The partner and the calibrated forest together".)
    """
    space = SearchSpace().add(Integer("a", 0, 30), Integer("b", 0, 20), Enum("c", ["x", "y", "z"]))
    t = create_technique("default", seed=4)
    log = run_technique(t, space, lambda c: (c["a"] - 7) ** 2 + abs(c["b"] - 3) + (c["c"] != "y"),
                        budget=50, seed=4)
    assert t.model_led and t.state_dict()["model_led"] is True
    assert {tr.technique for tr in log.trials} <= {"BayesOpt", "TPE"}
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


# -- a partner in the lead (option partner, "TPE" by default; docs/TECHNIQUES.md "TPE as a partner in the lead") --

def _discrete_space() -> SearchSpace:
    return SearchSpace().add(Integer("a", 0, 30), Integer("b", 0, 20), Enum("c", ["x", "y", "z"]))


def _bowl(c: dict) -> float:
    return (c["a"] - 7) ** 2 + abs(c["b"] - 3) + (c["c"] != "y")


def test_tpe_partners_by_default_and_none_lets_the_model_lead_alone() -> None:
    assert DEFAULT_PARTNER == "TPE"
    t = create_technique("default", seed=1)
    t.bind(_discrete_space(), budget=40, rng=np.random.default_rng(1))
    assert t.state_dict()["partner"] == "TPE"
    alone = create_technique("default", seed=1, partner=None)
    log = run_technique(alone, _discrete_space(), _bowl, budget=40, seed=1)
    assert alone.labels == list(DEFAULT_ARMS)
    assert "partner" not in alone.state_dict()
    assert {tr.technique for tr in log.trials} == {"BayesOpt"}


def test_the_partner_shares_the_lead_after_the_models_design() -> None:
    """With partner="TPE" on a discrete space only the two leaders propose, the GP alone during its design."""
    t = create_technique("default", seed=4, partner="TPE")
    log = run_technique(t, _discrete_space(), _bowl, budget=80, seed=4)
    assert t.state_dict()["partner"] == "TPE"
    who = [tr.technique for tr in log.trials]
    design = t.arms[t.labels.index("BayesOpt")]._n_init
    assert set(who[:design]) == {"BayesOpt"}                  # the model's initial design first
    assert set(who) == {"BayesOpt", "TPE"}                     # then both lead, nobody else
    assert len({tr.config_hash for tr in log.trials}) == 80
    assert log.best_value == 0.0


def test_the_partner_sits_out_where_the_model_does_not_lead() -> None:
    mixed = SearchSpace().add(Float("x", -1.0, 1.0), Integer("k", 0, 9))
    t = create_technique("default", seed=5, partner="TPE")
    log = run_technique(t, mixed, lambda c: c["x"] ** 2 + c["k"], budget=80, seed=5)
    assert "TPE" not in {tr.technique for tr in log.trials}
    forced = create_technique("default", seed=6, partner="TPE", model_led=False)
    log = run_technique(forced, _discrete_space(), _bowl, budget=60, seed=6)
    assert "TPE" not in {tr.technique for tr in log.trials}


def test_the_partner_steps_aside_when_the_model_retires() -> None:
    """A retired model hands the lead to the population arms, as without a partner (cheap objectives)."""
    t = create_technique("default", seed=7, partner="TPE")
    t.bind(_discrete_space(), budget=100, rng=np.random.default_rng(7))
    model = t.arms[t.labels.index("BayesOpt")]
    model.retired = "test: compute share exceeded"
    proposed = t.propose(12)
    picked = {t.labels[t._owner[t.hash(c)][0]] for c in proposed}
    assert proposed and picked <= {"DifferentialEvolution", "GA"}


def test_resume_replays_the_same_duel() -> None:
    live = create_technique("default", seed=3, partner="TPE")
    log = run_technique(live, _discrete_space(), _bowl, budget=70, seed=3)
    fresh = create_technique("default", seed=3, partner="TPE")
    fresh.bind(_discrete_space(), budget=70, rng=np.random.default_rng(99))
    fresh.restore(log.trials)
    assert list(fresh.auc.history) == list(live.auc.history)
    assert fresh.state_dict()["uses"] == live.state_dict()["uses"]


def test_a_bad_partner_is_named() -> None:
    import pytest

    from ensemble.errors import TechniqueError

    with pytest.raises(TechniqueError, match="partner must be a technique name"):
        DefaultEnsemble(partner=3)
    with pytest.raises(TechniqueError, match="unknown technique"):
        DefaultEnsemble(partner="NoSuchTechnique")


def test_with_a_partner_the_conformance_rules_hold() -> None:
    """The shared conformance rules (tests/techniques/test_conformance.py) on a discrete constrained space
    with failures, where the partner leads: valid proposals, batches and budget respected, one seed one run."""
    import hashlib
    import json
    import math

    def space() -> SearchSpace:
        s = SearchSpace().add(Integer("wx", 1, 16), Integer("wy", 1, 16), Enum("m", ["g", "l", "i"]))
        s.require("wx * wy <= 96")
        return s

    def objective(c: dict) -> float:
        h = int(hashlib.sha256(json.dumps(c, sort_keys=True).encode()).hexdigest()[:8], 16)
        return math.inf if h % 100 < 30 else abs(c["wx"] - 6) + abs(c["wy"] - 9) + (c["m"] != "l")

    for batch in (1, 5):
        runs = [run_technique(create_technique("default", partner="TPE"), space(), objective, budget=70, seed=8,
                              batch=batch) for _ in range(2)]
        log = runs[0]
        assert all(space().is_valid(c) for c in log.proposals)
        assert max(log.batch_sizes) <= batch
        assert len({tr.config_hash for tr in log.trials if not tr.duplicate}) <= 70
        assert "TPE" in {tr.technique for tr in log.trials}
        assert log.hashes == runs[1].hashes


# -- the model's filter beside its partner (model_threshold; docs/TECHNIQUES.md "A stricter filter for the GP
# beside its partner") --

def _model_threshold(t: DefaultEnsemble) -> float:
    from techniques.bayes_opt import BayesOpt

    (model,) = [arm for arm in t.arms if isinstance(arm, BayesOpt)]
    return model.feasible_threshold


def test_the_model_filters_harder_only_beside_its_partner() -> None:
    """0.7 with TPE in the lead; the GP leading alone keeps BayesOpt's 0.5 (it lost pnpoly's boundary at 0.7)."""
    from techniques.base import FILTER_THRESHOLD
    from techniques.default import PARTNERED_MODEL_THRESHOLD

    assert PARTNERED_MODEL_THRESHOLD == 0.7
    assert _model_threshold(create_technique("default", seed=1)) == PARTNERED_MODEL_THRESHOLD
    assert _model_threshold(create_technique("default", seed=1, partner=None)) == FILTER_THRESHOLD
    assert _model_threshold(create_technique("default", seed=1, model_threshold=0.5)) == 0.5
    assert _model_threshold(create_technique("default", seed=1, partner=None, model_threshold=0.6)) == 0.6


def test_a_bad_model_threshold_names_the_option() -> None:
    import pytest

    from ensemble.errors import TechniqueError

    for bad in (0.0, 1.0, "high", 1.5):
        with pytest.raises(TechniqueError, match="model_threshold"):
            DefaultEnsemble(model_threshold=bad)


def test_the_partner_sits_out_under_partner_min_budget() -> None:
    """Under the budget the model leads alone at BayesOpt's threshold; at or above it, or with no budget, TPE joins."""
    from techniques.base import FILTER_THRESHOLD
    from techniques.default import PARTNERED_MODEL_THRESHOLD

    small = create_technique("default", seed=2, partner_min_budget=100)
    log = run_technique(small, _discrete_space(), _bowl, budget=60, seed=2)
    assert {tr.technique for tr in log.trials} == {"BayesOpt"}
    assert _model_threshold(small) == FILTER_THRESHOLD
    for budget in (100, None):
        t = create_technique("default", seed=2, partner_min_budget=100)
        t.bind(_discrete_space(), budget=budget, rng=np.random.default_rng(2))
        assert t._partner not in t.inactive and _model_threshold(t) == PARTNERED_MODEL_THRESHOLD
    import pytest

    from ensemble.errors import TechniqueError

    for bad in (0, 2.5, True, "many"):
        with pytest.raises(TechniqueError, match="partner_min_budget"):
            DefaultEnsemble(partner_min_budget=bad)


def test_where_the_partner_sits_out_the_model_keeps_bayes_opts_threshold() -> None:
    """A space with a continuous parameter: the bandit shares the trials, TPE sits out, the GP filters at 0.5."""
    from techniques.base import FILTER_THRESHOLD

    t = create_technique("default", seed=3)
    t.bind(SearchSpace().add(Float("x", 0.0, 1.0), Integer("k", 0, 3)), budget=200, rng=np.random.default_rng(3))
    assert not t.model_led and t._partner in t.inactive
    assert _model_threshold(t) == FILTER_THRESHOLD


# -- the partner draws again when no candidate is likely to run (partner_redraws; docs/TECHNIQUES.md
#    "TPE draws again when no candidate is likely to run") ---------------------------------------------------


def test_the_partner_redraws_by_default_and_the_option_turns_it_off() -> None:
    """TPE as the default's partner draws up to 4 more batches; TPE on its own, or given as a Technique, keeps
    its own setting; partner_redraws=0 restores the ranking of every candidate."""
    import pytest

    from ensemble.errors import TechniqueError
    from techniques.default import PARTNER_REDRAWS
    from techniques.tpe import TPE

    def redraws(t: DefaultEnsemble) -> int:
        return t.arms[t.labels.index("TPE")].redraws

    assert PARTNER_REDRAWS == 4
    assert redraws(create_technique("default", seed=1)) == PARTNER_REDRAWS
    assert redraws(create_technique("default", seed=1, partner_redraws=0)) == 0
    assert redraws(DefaultEnsemble(seed=1, partner=TPE(redraws=2))) == 2
    assert redraws(DefaultEnsemble(seed=1, partner=TPE(redraws=2), partner_redraws=1)) == 1
    assert create_technique("TPE", seed=1).redraws == 0
    for bad in (-1, 1.5, True, "4"):
        with pytest.raises(TechniqueError, match="partner_redraws"):
            DefaultEnsemble(partner_redraws=bad)


# -- the GP's exploring picks beside its partner (model_explore; docs/TECHNIQUES.md "The GP stops its exploring
#    picks beside TPE") ----------------------------------------------------------------------------------------


def test_the_model_stops_exploring_only_beside_its_partner() -> None:
    """0 while TPE shares the lead; BayesOpt's own 0.05 alone or where the partner sits out; the option rules."""
    import pytest

    from ensemble.errors import TechniqueError
    from techniques.default import PARTNERED_MODEL_EXPLORE

    def explore(t: DefaultEnsemble) -> float:
        return t.arms[t._model].explore_failures

    discrete = SearchSpace().add(Integer("a", 0, 9), Integer("b", 0, 9))
    t = create_technique("default", seed=1)
    t.bind(discrete, budget=100, rng=np.random.default_rng(1))
    assert PARTNERED_MODEL_EXPLORE == 0.0 and explore(t) == 0.0
    alone = create_technique("default", seed=1, partner=None)
    alone.bind(discrete, budget=100, rng=np.random.default_rng(1))
    assert explore(alone) == 0.05
    sits_out = create_technique("default", seed=1)
    sits_out.bind(SearchSpace().add(Float("x", 0.0, 1.0), Integer("k", 0, 3)), budget=100,
                  rng=np.random.default_rng(1))
    assert sits_out._partner in sits_out.inactive and explore(sits_out) == 0.05
    forced = create_technique("default", seed=1, model_explore=0.05)
    forced.bind(discrete, budget=100, rng=np.random.default_rng(1))
    assert explore(forced) == 0.05
    for bad in (-0.1, 1.5, "some", True):
        with pytest.raises(TechniqueError, match="model_explore"):
            DefaultEnsemble(model_explore=bad)


# -- the model's initial design of at most ten points (model_initial_cap; docs/TECHNIQUES.md
#    "A ten-point initial design") ---------------------------------------------------------------------------


def _first_partner_trial(**options: object) -> tuple[int, int]:
    """(the model's design size, the index of the partner's first trial) of one seeded run of the default."""
    space = SearchSpace().add(Integer("a", 0, 40), Integer("b", 0, 40), Enum("c", ["x", "y", "z"]))
    t = create_technique("default", seed=5, **options)
    log = run_technique(t, space, lambda c: (c["a"] - 13) ** 2 + (c["b"] - 29) ** 2 + (c["c"] != "z"),
                        budget=200, seed=5)
    labels = [tr.technique for tr in log.trials]
    return t.arms[t._model]._n_init, labels.index("TPE")


def test_the_model_hands_over_after_ten_design_points_and_the_option_restores_twenty() -> None:
    """While the design is measured only the model proposes; the partner joins once it is in, after 10 points
    by default (a fifth of the budget would allow 40) and after BayesOpt's own 20 with model_initial_cap=20."""
    import pytest

    from ensemble.errors import TechniqueError
    from techniques.bayes_opt import BayesOpt
    from techniques.default import MODEL_INITIAL_CAP

    assert MODEL_INITIAL_CAP == 10
    n, first = _first_partner_trial()
    assert n == 10 and first >= 10
    n20, first20 = _first_partner_trial(model_initial_cap=20)
    assert n20 == 20 and first20 >= 20
    assert first < first20
    for bad in (0, 2.5, True, "10"):
        with pytest.raises(TechniqueError, match="model_initial_cap must be a whole number >= 1"):
            DefaultEnsemble(model_initial_cap=bad)  # type: ignore[arg-type]
        with pytest.raises(TechniqueError, match="initial_cap must be a whole number >= 1"):
            BayesOpt(initial_cap=bad)  # type: ignore[arg-type]


def test_bayes_opt_alone_keeps_the_papers_twenty_and_initial_overrides_the_cap() -> None:
    from ensemble.space import SearchSpace as Space

    space = Space().add(Integer("a", 0, 40), Integer("b", 0, 40))

    def design(budget: int | None, **options: object) -> int:
        t = create_technique("BayesOpt", seed=0, **options)
        t.bind(space, budget=budget)
        return t._n_init

    assert design(300) == 20 and design(None) == 20
    assert design(300, initial_cap=10) == 10 and design(None, initial_cap=10) == 10
    assert design(30, initial_cap=10) == 6  # a fifth of the budget
    assert design(10, initial_cap=10) == 5  # and at least five
    assert design(300, initial_cap=10, initial=14) == 14
