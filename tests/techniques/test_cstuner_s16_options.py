"""Session 16's options (issue 12): the preset's bandit with Fialho et al.'s rank-based AUC credit, UCB1-Tuned.

``CsTunerEnsemble(credit="rank")`` ranks every use in the bandit's window by
its value minus the run's best before it and credits an arm with the area
under the ROC curve of its uses against the other arms' (docs/CSTUNER.md,
session 16; ``techniques.cstuner.ensemble.RankWindow``), with UCB1-Tuned's
exploration term (``exploration="tuned"``).  Both the preset's defaults since
session 16 (adopted by the rule in docs/cstuner_results/h12_adoption_rule_s16.txt);
``credit="new-best"`` (``variants:CsTunerEnsembleNewBest``) is the preset as
it was, and the bandit everyone else uses (techniques/bandit.py) is not
touched.  Checked: the area on a hand-worked window, ties and failures, that
the bandit then asks the arm whose uses rank better where OpenTuner's credit
(no new best anywhere) only alternates, that UCB1-Tuned asks again an arm
judged on one use where c = 0.05 does not, that start-up results stay out of
the window, reproducibility, the whole budget, resume, and bad values naming
the option.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ensemble.errors import TechniqueError
from ensemble.technique import Trial
from techniques.bandit import AUCBandit, AUCWindow
from techniques.cstuner.ensemble import CsTunerEnsemble, RankWindow
from tests.techniques.driven import run_technique
from tests.techniques.test_cstuner_technique import stencil_like, stencil_time


def test_rank_window_area_on_a_hand_worked_window() -> None:
    w = RankWindow(3, window=10, c=0.05)
    for arm, reward in [(0, -1.0), (1, 2.0), (0, 0.5), (2, 0.5), (1, math.inf)]:
        w.push(arm, reward)
    auc = w.exploitation()
    # arm 0's uses (-1, 0.5) against the others' (2, 0.5, inf): -1 beats all 3; 0.5 beats 2 and inf, ties 0.5
    assert auc[0] == pytest.approx((3 + 2.5) / 6)
    # arm 1's (2, inf) against (-1, 0.5, 0.5): 2 beats nothing, inf nothing
    assert auc[1] == pytest.approx(0.0)
    # arm 2's (0.5) against (-1, 2, 0.5, inf): beats 2 and inf, ties 0.5
    assert auc[2] == pytest.approx(2.5 / 4)
    assert w.uses == [2, 2, 1]
    # the score adds the UCB1 term of OpenTuner's window; an unused arm scores +inf
    assert w.score(2) == pytest.approx(2.5 / 4 + 0.05 * math.sqrt(2 * math.log(5) / 1))
    assert RankWindow(2, 10, 0.05).score(0) == math.inf


def test_rank_window_slides() -> None:
    w = RankWindow(2, window=3, c=0.0)
    for arm, reward in [(0, -5.0), (1, 1.0), (1, 2.0), (0, 3.0)]:    # the first use (-5) leaves the window
        w.push(arm, reward)
    assert w.uses == [1, 2]
    assert w.exploitation()[0] == pytest.approx(0.0)                  # 3 ranks below 1 and 2


def _bound_preset(credit: str) -> CsTunerEnsemble:
    preset = CsTunerEnsemble(seed=5, credit=credit, exploration="ucb1", startup=False)
    preset.bind(stencil_like(), budget=500, rng=np.random.default_rng(5))
    return preset


def _trial(preset: CsTunerEnsemble, cfg: dict, value: float, label: str) -> Trial:
    return Trial(config=dict(cfg), config_hash=preset.hash(cfg), value=value, state="OK", technique=label)


def _feed(preset: CsTunerEnsemble) -> None:
    """One first result, then 30 uses per arm, none a new best: CsTuner's just above the best, the others far."""
    configs = iter(stencil_like().sample(np.random.default_rng(0), 91))
    preset.observe(_trial(preset, next(configs), 1.0, "CsTuner"))
    for k in range(30):
        for label, value in (("NelderMead", 3.0 + k), ("SimulatedAnnealing", 2.0 + k), ("CsTuner", 1.01)):
            preset.observe(_trial(preset, next(configs), value, label))


def test_rank_credit_asks_the_arm_whose_uses_rank_better() -> None:
    preset = _bound_preset("rank")
    _feed(preset)
    auc = preset.state_dict()["rank_auc"]
    assert auc["CsTuner"] > 0.95 and auc["NelderMead"] < 0.3
    picks = [preset._pick(set()) for _ in range(20)]
    assert set(picks) == {2}                                          # CsTuner, every time


def test_new_best_credit_has_nothing_to_compare_when_no_use_is_a_new_best() -> None:
    preset = _bound_preset("new-best")
    _feed(preset)
    assert preset.auc.credited == [0, 0, 1]                           # OpenTuner's credit: the first result only
    assert "rank_auc" not in preset.state_dict()
    # its exploitation terms are all but zero, so the UCB term decides: far below the rank credit's spread
    assert max(preset.auc.exploitation(i) for i in range(3)) < 0.01
    scores = preset.scores()
    assert max(scores.values()) - min(scores.values()) < 0.01         # the rank credit's spread here is > 0.6


def test_the_preset_as_it_was_keeps_openturners_credit() -> None:
    from techniques.cstuner.variants import CsTunerEnsembleNewBest

    preset = CsTunerEnsembleNewBest(seed=1)
    assert preset.credit_rule == "new-best" and preset.exploration == "ucb1"
    log = run_technique(preset, stencil_like(), stencil_time, budget=120, seed=1)
    assert log.unique == 120
    assert len(preset.ranks.history) == 0                             # the rank window is never filled
    # and the scores are AUCBandit's own
    assert preset.scores() == AUCBandit.scores(preset)
    assert isinstance(preset.auc, AUCWindow)


def test_the_preset_defaults_to_the_rank_credit_and_ucb1_tuned() -> None:
    preset = CsTunerEnsemble(seed=1)
    assert preset.credit_rule == "rank" and preset.exploration == "tuned"
    assert CsTunerEnsemble(credit="new-best").exploration == "ucb1"
    assert CsTunerEnsemble(credit="rank", exploration="ucb1").exploration == "ucb1"


def test_rank_credit_keeps_the_start_up_out_of_its_window_and_uses_the_whole_budget() -> None:
    preset = CsTunerEnsemble(seed=3, credit="rank")
    log = run_technique(preset, stencil_like(), stencil_time, budget=150, seed=3)
    assert log.unique == 150
    dataset = preset.arms[2].startup_trials
    assert dataset > 0
    # every result after the start-up, and none of it, is in the rank window (150 < window)
    assert len(preset.ranks.history) == len(log.trials) - dataset
    assert sum(preset.ranks.uses) == sum(preset.auc.uses)


def test_rank_credit_is_reproducible_with_a_seed() -> None:
    def run(seed: int) -> list[str]:
        log = run_technique(CsTunerEnsemble(seed=seed, credit="rank"), stencil_like(), stencil_time,
                            budget=120, seed=seed)
        assert log.unique == 120
        return log.hashes

    assert run(11) == run(11)
    assert run(11) != run(12)


def test_rank_credit_is_replayed_on_resume() -> None:
    preset = CsTunerEnsemble(seed=4, credit="rank", startup=False)
    log = run_technique(preset, stencil_like(), stencil_time, budget=80, seed=4)
    again = CsTunerEnsemble(seed=4, credit="rank", startup=False)
    again.bind(stencil_like(), budget=80, rng=np.random.default_rng(4))
    again.restore(log.trials)
    assert list(again.ranks.history) == list(preset.ranks.history)
    assert again.state_dict()["rank_auc"] == preset.state_dict()["rank_auc"]


@pytest.mark.parametrize("bad", ["Rank", "auc", 1, None, True])
def test_bad_credit_names_the_option(bad) -> None:
    with pytest.raises(TechniqueError, match="credit"):
        CsTunerEnsemble(credit=bad)


def test_tuned_exploration_is_ucb1_tuned_on_the_per_use_percentiles() -> None:
    w = RankWindow(2, window=10, c=0.05)
    for arm, reward in [(0, -1.0), (1, 2.0), (0, 3.0), (1, 1.0)]:
        w.push(arm, reward)
    p0 = w.percentiles()[0]
    assert list(p0) == [1.0, 0.0]                                     # -1 beats both of arm 1's, 3 neither
    assert w.exploitation()[0] == pytest.approx(0.5)
    log_n, n = math.log(4), 2
    expected = 0.5 + math.sqrt(log_n / n * min(0.25, float(np.var(p0)) + math.sqrt(2 * log_n / n)))
    assert w.score(0, "tuned") == pytest.approx(expected)
    assert w.score(0) == pytest.approx(0.5 + 0.05 * math.sqrt(2 * log_n / n))


def _one_bad_use_then_many_fair_ones(exploration: str) -> CsTunerEnsemble:
    """CsTuner's only use after the first result ranks last; the other two arms' 100 uses each are alike."""
    preset = CsTunerEnsemble(seed=5, credit="rank", exploration=exploration, startup=False)
    preset.bind(stencil_like(), budget=500, rng=np.random.default_rng(5))
    configs = iter(stencil_like().sample(np.random.default_rng(1), 203))
    preset.observe(_trial(preset, next(configs), 1.0, "NelderMead"))
    preset.observe(_trial(preset, next(configs), 50.0, "CsTuner"))
    rng = np.random.default_rng(2)
    for _ in range(100):
        for label in ("NelderMead", "SimulatedAnnealing"):
            preset.observe(_trial(preset, next(configs), 1.0 + float(rng.random()), label))
    return preset


def test_tuned_exploration_asks_again_an_arm_judged_on_one_use() -> None:
    openturner = _one_bad_use_then_many_fair_ones("ucb1")
    assert 2 not in {openturner._pick(set()) for _ in range(20)}     # c = 0.05: one use decided it
    tuned = _one_bad_use_then_many_fair_ones("tuned")
    assert tuned._pick(set()) == 2                                    # its bound covers a one-use estimate


@pytest.mark.parametrize("bad", ["UCB1", "ucb", ""])
def test_bad_exploration_names_the_option(bad) -> None:
    with pytest.raises(TechniqueError, match="exploration"):
        CsTunerEnsemble(credit="rank", exploration=bad)


def test_tuned_exploration_needs_the_rank_credit() -> None:
    with pytest.raises(TechniqueError, match="exploration='tuned'.*credit='rank'"):
        CsTunerEnsemble(credit="new-best", exploration="tuned")


def test_tuned_exploration_uses_the_whole_budget_and_repeats_with_a_seed() -> None:
    def run(seed: int) -> tuple[list[str], CsTunerEnsemble]:
        preset = CsTunerEnsemble(seed=seed, credit="rank", exploration="tuned")
        log = run_technique(preset, stencil_like(), stencil_time, budget=150, seed=seed)
        assert log.unique == 150
        return log.hashes, preset

    first, preset = run(7)
    assert first == run(7)[0] and first != run(8)[0]
    assert min(preset.ranks.uses) >= 5                                # no arm starved after one or two uses
