"""CsTuner end to end through the real driver on the in-memory store: pipeline, whole budget, metrics, bad input."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np
import pytest

from ensemble.errors import TechniqueError
from ensemble.space import Boolean, Enum, Integer, PowerOfTwo, SearchSpace
from ensemble.technique import Trial
from techniques.cstuner.technique import CsTuner
from tests.techniques.driven import run_technique


def stencil_like() -> SearchSpace:
    s = SearchSpace()
    s.add(PowerOfTwo("tbx", 1, 256), PowerOfTwo("tby", 1, 64), PowerOfTwo("ufx", 1, 8),
          Boolean("shared"), Enum("sd", [1, 2, 3]), Integer("merge", 1, 4))
    s.require("tbx * tby <= 256")
    return s


def stencil_time(c: dict) -> float:
    occupancy = abs(math.log2(c["tbx"] * c["tby"]) - 7)
    return (1.0 + occupancy + 0.3 * abs(math.log2(c["tbx"]) - 5) + 0.5 * abs(c["ufx"] - 4) / 4
            + (0.0 if c["shared"] else 0.4) + 0.1 * c["sd"] + 0.2 * abs(c["merge"] - 2))


def test_dataset_first_then_groups_and_the_whole_budget() -> None:
    space = stencil_like()
    tech = CsTuner(seed=1, samples=40)
    log = run_technique(tech, space, stencil_time, budget=300, seed=1)
    assert log.unique == 300                           # never ends early with budget and unseen configs
    assert all(space.is_valid(c) for c in log.proposals)
    assert tech.n_samples == 30 and tech.phase != "dataset"   # 10 % of the budget, below samples=40
    assert sorted(n for g in tech.groups for n in g) == sorted(space.names)
    assert "objective" in tech.model_checks            # no metrics: PMNF on the objective (fitted, then checked)
    assert tech.reports and log.best_value <= min(stencil_time(c) for c in log.proposals[:30])


def test_dataset_is_a_tenth_of_a_known_budget_never_below_eq3s_coefficients() -> None:
    tech = CsTuner(seed=0)                             # stencil_like: 6 parameters, Eq. 3 needs 7 points
    tech.bind(stencil_like(), budget=100, rng=np.random.default_rng(0))
    assert tech.n_samples == 10                        # dataset_fraction 0.1
    tech.bind(stencil_like(), budget=30, rng=np.random.default_rng(0))
    assert tech.n_samples == 7                         # floor: len(parameters) + 1
    tech.bind(stencil_like(), budget=5, rng=np.random.default_rng(0))
    assert tech.n_samples == 5                         # never more than the budget
    tech.bind(stencil_like(), budget=10_000, rng=np.random.default_rng(0))
    assert tech.n_samples == 128                       # the paper's N
    tech = CsTuner(seed=0, samples=3)
    tech.bind(stencil_like(), budget=100, rng=np.random.default_rng(0))
    assert tech.n_samples == 3                         # an explicit small N is kept


def test_small_space_is_exhausted_then_done() -> None:
    space = SearchSpace().add(Integer("a", 0, 5), Integer("b", 0, 3))
    space.require("a != 2")
    tech = CsTuner(seed=2, samples=6)
    log = run_technique(tech, space, lambda c: (c["a"] - 4) ** 2 + c["b"], budget=1000, seed=2)
    assert log.unique == 20 and log.best_value == 0 and tech.done


def _observe(tech: CsTuner, cfg: dict, value: float, metrics: dict | None) -> None:
    h = tech.space.config_hash(cfg)
    tech.observe(Trial(config=cfg, config_hash=h, value=value, state="OK" if math.isfinite(value) else "FAILED",
                       technique="CsTuner", metrics=metrics))


def test_metrics_are_combined_and_modelled() -> None:
    space = stencil_like()
    tech = CsTuner(seed=3, samples=30, num_collections=2)
    tech.bind(space, budget=200, rng=np.random.default_rng(3))
    for _ in range(30):
        for cfg in tech.propose(1):
            t = stencil_time(cfg)
            occ = abs(math.log2(cfg["tbx"] * cfg["tby"]) - 7)
            _observe(tech, cfg, t, {"dram_bytes": 2 * t, "l2_hit": 1.0 - 0.1 * t, "achieved_occupancy": -occ,
                                    "warps": -2 * occ + 0.01 * cfg["merge"], "time": t})
    assert tech.propose(1)                           # the model stage ran and the search proposes
    assert tech.phase == "groups" and len(tech.selected_metrics) == 2
    assert set(tech.models) == set(tech.selected_metrics)
    assert "time" not in tech.selected_metrics


def _dataset_then_fit(tech: CsTuner, value: Callable[[dict], float], n: int) -> None:
    """Measure ``n`` dataset samples, then one more propose: the grouping and PMNF stage runs."""
    for _ in range(n):
        for cfg in tech.propose(1):
            _observe(tech, cfg, value(cfg), None)
    assert tech.propose(1) and tech.phase == "groups"


def test_model_check_keeps_a_useless_model_out_of_the_sample() -> None:
    # the objective is noise: a PMNF model of it cuts the space blindly
    noise = np.random.default_rng(11)
    values: dict[str, float] = {}

    def value(c: dict) -> float:
        return values.setdefault(stencil_like().config_hash(c), 1.0 + float(noise.random()))

    tech = CsTuner(seed=11, samples=40)                # model_check=0.05, the default
    tech.bind(stencil_like(), budget=400, rng=np.random.default_rng(11))
    _dataset_then_fit(tech, value, 40)
    assert tech.models == {}                           # not used: the sampled space is a random 10 %
    assert tech.model_checks["objective"]["p"] >= tech.model_check
    assert any("not better than chance" in f for f in tech.fallbacks)
    assert tech.state_dict()["model_checks"]["objective"]["p"] >= tech.model_check

    paper = CsTuner(seed=11, samples=40, model_check=None)   # the paper: every fitted model guides
    paper.bind(stencil_like(), budget=400, rng=np.random.default_rng(11))
    _dataset_then_fit(paper, value, 40)
    assert "objective" in paper.models and paper.model_checks == {}
    assert not any("not better than chance" in f for f in paper.fallbacks)


def test_model_check_keeps_a_model_that_ranks_held_out_samples() -> None:
    tech = CsTuner(seed=12, samples=40)
    tech.bind(stencil_like(), budget=400, rng=np.random.default_rng(12))
    _dataset_then_fit(tech, stencil_time, 40)
    assert "objective" in tech.models and tech.model_checks["objective"]["p"] < tech.model_check


def test_every_sample_failed_falls_back_and_keeps_searching() -> None:
    space = stencil_like()
    calls = {"n": 0}

    def f(c: dict) -> float:
        calls["n"] += 1
        return math.inf if calls["n"] <= 20 else stencil_time(c)

    tech = CsTuner(seed=4, samples=20)
    log = run_technique(tech, space, f, budget=80, seed=4)
    assert log.unique == 80 and math.isfinite(log.best_value)
    assert any("every dataset sample failed" in x for x in tech.fallbacks)


def test_fewer_samples_than_parameters_is_a_documented_fallback() -> None:
    tech = CsTuner(seed=5, samples=3)
    log = run_technique(tech, stencil_like(), stencil_time, budget=60, seed=5)
    assert log.unique == 60
    assert any("successful samples" in x for x in tech.fallbacks)


def test_one_parameter_space() -> None:
    space = SearchSpace().add(Integer("x", 0, 99))
    tech = CsTuner(seed=6, samples=10)
    log = run_technique(tech, space, lambda c: (c["x"] - 42) ** 2, budget=60, seed=6)
    assert tech.groups == [["x"]] and log.unique == 60 and log.best_value <= 4


def test_levels_of_mixed_types_as_in_flag_spaces() -> None:
    # HLS/compiler flag spaces use None for "option not given" beside numbers and strings
    space = SearchSpace().add(Enum("unroll", [None, 2, 4, 8]), Enum("sched", [None, "asap", "alap"]),
                              Enum("pipe", [None, True, False]), Integer("x", 0, 9))

    def cost(c: dict) -> float:
        return (0.0 if c["unroll"] is None else c["unroll"]) + (c["sched"] == "asap") + abs(c["x"] - 3)

    tech = CsTuner(seed=5, samples=12)
    log = run_technique(tech, space, cost, budget=80, seed=5)
    assert log.unique == 80 and all(space.is_valid(c) for c in log.proposals)
    assert log.best_value <= 1.0


def test_every_configuration_fails_uses_the_budget_without_crashing() -> None:
    tech = CsTuner(seed=7, samples=10)
    log = run_technique(tech, stencil_like(), lambda c: math.inf, budget=50, seed=7)
    assert log.unique == 50 and not math.isfinite(log.best_value)
    assert any("every dataset sample failed" in x for x in tech.fallbacks)


@pytest.mark.parametrize("continuation", ["joint", "descents"])
def test_both_continuations_use_the_whole_budget(continuation: str) -> None:
    space = stencil_like()
    tech = CsTuner(seed=8, samples=20, continuation=continuation)
    log = run_technique(tech, space, stencil_time, budget=250, seed=8)
    assert log.unique == 250 and all(space.is_valid(c) for c in log.proposals)
    if continuation == "descents":
        assert tech.restarts >= 1 or tech.ratio > tech.sampling_ratio


@pytest.mark.parametrize("budget", [20, 25])
def test_budget_share_takes_the_first_pass_over_every_group(budget: int) -> None:
    # 7 dataset samples leave 13-18 evaluations; the first group alone (4 parameters, a GA) would take
    # all of them at the paper's sizes and the pass would never reach the other groups
    space = stencil_like()
    shared = CsTuner(seed=1)
    log = run_technique(shared, space, stencil_time, budget=budget, seed=1)
    assert log.unique == budget and shared.shares and all(s >= 1 for s in shared.shares)
    first_pass = [tuple(r.group) for r in shared.reports[: len(shared.groups)]]
    assert first_pass == [tuple(g) for g in shared.groups]         # every group searched once, in order
    assert shared.reports[0].reason == "budget" and shared.reports[0].evaluations <= shared.shares[0] + 1
    paper = CsTuner(seed=1, budget_share=False)
    log_paper = run_technique(paper, space, stencil_time, budget=budget, seed=1)
    assert log_paper.unique == budget and not paper.shares and paper.passes == 0 and not paper.reports


def test_budget_share_leaves_a_budget_that_pays_for_the_pass_alone() -> None:
    tech = CsTuner(seed=8, samples=20)
    run_technique(tech, stencil_like(), stencil_time, budget=250, seed=8)
    first = tech.reports[: len(tech.groups)]
    assert all(r.reason != "budget" for r in first)


def test_startup_phase_pass_lets_the_bandit_run_the_papers_pipeline_first() -> None:
    from ensemble.registry import create_technique
    from techniques.bandit import AUCBandit

    cs = CsTuner(startup_phase="pass")
    bandit = AUCBandit(seed=4, arms=[create_technique("NelderMead"), cs], window=500, c=0.05, startup=True)
    log = run_technique(bandit, stencil_like(), stencil_time, budget=200, seed=4)
    names = [t.technique for t in log.trials]
    end = cs.startup_trials
    assert cs.passes >= 1 and end > cs.n_samples                   # the dataset and the whole first pass
    assert names[:end] == ["CsTuner"] * end and "NelderMead" in names[end:]
    assert len(bandit.auc.history) == len(log.trials) - end        # none of it credited
    dataset_only = CsTuner(startup_phase="dataset")
    dataset_only.bind(stencil_like(), budget=200, rng=np.random.default_rng(0))
    assert dataset_only.startup_trials == dataset_only.n_samples


def test_constants_aside_keeps_one_value_parameters_out_of_the_cvs_and_the_floor() -> None:
    # screened on 2026-11-26 and not adopted (docs/CSTUNER.md): off by default, the constants grouped
    space = stencil_like().add(Enum("filter", [3]), Enum("cmem", [1]))
    aside = CsTuner(seed=2, constants_aside=True)
    log = run_technique(aside, space, stencil_time, budget=40, seed=2)
    assert aside.n_samples == 7 and log.unique == 40               # floor: the 6 free parameters + 1
    assert aside.constants == ["filter", "cmem"] and aside.groups[-1][-2:] == ["filter", "cmem"]
    assert all("filter" not in pair and "cmem" not in pair for pair in aside.cvs)
    grouped = CsTuner(seed=2)
    run_technique(grouped, space, stencil_time, budget=40, seed=2)
    assert grouped.n_samples == 9 and not grouped.constants and ("filter", "cmem") in grouped.cvs


def test_the_preset_arm_keeps_the_budget_share_off() -> None:
    from techniques.cstuner.ensemble import CsTunerEnsemble

    arm = next(a for a in CsTunerEnsemble(seed=0).arms if isinstance(a, CsTuner))
    assert not arm.budget_share and arm.startup_phase == "dataset" and CsTuner(seed=0).budget_share
    arm = next(a for a in CsTunerEnsemble(seed=0, cstuner={"budget_share": True}).arms if isinstance(a, CsTuner))
    assert arm.budget_share


def test_bad_options_name_the_argument() -> None:
    with pytest.raises(Exception, match="continuation"):
        CsTuner(continuation="nope")
    with pytest.raises(Exception, match="sampling_ratio"):
        CsTuner(sampling_ratio=0.0)
    with pytest.raises(Exception, match="samples"):
        CsTuner(samples=0)
    with pytest.raises(TechniqueError, match="startup_phase"):
        CsTuner(startup_phase="first")
    for opt in ("budget_share", "constants_aside"):
        with pytest.raises(TechniqueError, match=opt):
            CsTuner(**{opt: "no"})
    for bad in (0.0, 1.0, -0.1, 2):
        with pytest.raises(TechniqueError, match="model_check"):
            CsTuner(model_check=bad)


def test_earlier_defaults_are_importable_for_side_by_side_runs() -> None:
    from techniques.cstuner.variants import CsTunerEnsembleJoint, CsTunerJoint

    old = CsTunerJoint(seed=0)
    assert (old.continuation, old.model_check) == ("joint", None) and old.name == "CsTuner-joint"
    now = CsTuner(seed=0)
    assert (now.continuation, now.model_check) == ("descents", 0.01)
    arm = [a for a in CsTunerEnsembleJoint(seed=0).arms if isinstance(a, CsTuner)][0]
    assert (arm.continuation, arm.model_check) == ("joint", None)
