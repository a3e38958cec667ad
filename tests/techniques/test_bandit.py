"""The AUC bandit against hand-computed scores, eviction, duplicates, restore."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ensemble.errors import TechniqueError
from ensemble.space import Float, Integer, SearchSpace
from ensemble.technique import Trial
from techniques.bandit import AUCBandit, AUCWindow
from techniques.base import BaseTechnique
from techniques.round_robin import RoundRobin
from tests.techniques.driven import run_technique


def test_auc_by_hand_with_window_eviction() -> None:
    w = AUCWindow(2, window=3, c=0.0)
    w.push(0, True)  # arm 0: [1]           -> 2/(1*2) * 1
    assert w.score(0) == pytest.approx(1.0)
    w.push(0, False)  # arm 0: [1, 0]       -> 2/(2*3) * 1
    assert w.score(0) == pytest.approx(1 / 3)
    w.push(0, True)  # arm 0: [1, 0, 1]     -> 2/(3*4) * (1 + 3)
    assert w.score(0) == pytest.approx(2 / 3)
    w.push(1, True)  # evicts arm 0's first: arm 0 [0, 1] -> 2/6 * 2 ; arm 1 [1] -> 1
    assert w.score(0) == pytest.approx(2 / 3)
    assert w.score(1) == pytest.approx(1.0)
    w.push(1, False)  # evicts arm 0's 0: arm 0 [1] -> 1 ; arm 1 [1, 0] -> 1/3
    assert w.score(0) == pytest.approx(1.0)
    assert w.score(1) == pytest.approx(1 / 3)
    assert list(w.history) == [(0, True), (1, True), (1, False)]


def test_exploration_term_by_hand() -> None:
    w = AUCWindow(3, window=10, c=0.5)
    for arm, credit in [(0, True), (0, False), (1, False), (0, True), (1, True)]:
        w.push(arm, credit)
    n_total = 5
    # arm 0: [1, 0, 1] -> 2/12 * (1 + 3); arm 1: [0, 1] -> 2/6 * 2
    assert w.score(0) == pytest.approx(4 / 6 + 0.5 * math.sqrt(2 * math.log(n_total) / 3))
    assert w.score(1) == pytest.approx(4 / 6 + 0.5 * math.sqrt(2 * math.log(n_total) / 2))
    assert w.score(2) == math.inf  # never used: tried first


def test_incremental_score_equals_direct_sum() -> None:
    rng = np.random.default_rng(0)
    w = AUCWindow(4, window=37, c=0.05)
    for _ in range(3000):
        w.push(int(rng.integers(4)), bool(rng.random() < 0.3))
        for arm in range(4):
            fast, slow = w.score(arm), w.score_direct(arm)
            assert fast == slow or fast == pytest.approx(slow, rel=1e-12, abs=1e-12)
    assert len(w.history) == 37


class _Fixed(BaseTechnique):
    """Test arm: proposes from a fixed list, cycling."""

    name = "Fixed"
    summary = "test arm"

    def __init__(self, values: list[int], label: str) -> None:
        super().__init__()
        self._values, self._i = values, 0
        self.name = label  # type: ignore[misc]

    def propose(self, n: int) -> list[dict[str, Any]]:
        out = []
        for _ in range(n):
            out.append({"a": self._values[self._i % len(self._values)]})
            self._i += 1
        return out


def _space() -> SearchSpace:
    return SearchSpace().add(Integer("a", 0, 1000))


def _trial(space: SearchSpace, a: int, value: float, technique: str, *, duplicate: bool = False,
           state: str = "OK") -> Trial:
    c = {"a": a}
    return Trial(config=c, config_hash=space.config_hash(c), value=value, state=state, technique=technique,
                 duplicate=duplicate)


def test_credit_rule_duplicates_and_failures_get_none() -> None:
    space = _space()
    b = AUCBandit(arms=[_Fixed([1], "A"), _Fixed([2], "B")], window=10, c=0.05)
    b.bind(space, budget=100, rng=np.random.default_rng(0))
    b.observe(_trial(space, 5, 5.0, "A"))                        # novel, improves inf -> credit
    b.observe(_trial(space, 5, 5.0, "B", duplicate=True))        # duplicate -> none
    b.observe(_trial(space, 6, 3.0, "A"))                        # improves -> credit
    b.observe(_trial(space, 7, math.inf, "B", state="FAILED"))   # failure -> none
    b.observe(_trial(space, 8, 0.5, "B", duplicate=True))        # duplicate, even if "better" -> none
    b.observe(_trial(space, 9, 4.0, "A"))                        # novel but not better -> none
    b.observe(_trial(space, 11, 1.0, "B"))                       # the best is 0.5 now -> none
    b.observe(_trial(space, 10, 0.25, "B"))                      # improves 0.5 -> credit
    assert list(b.auc.history) == [(0, True), (1, False), (0, True), (1, False), (1, False), (0, False),
                                 (1, False), (1, True)]
    n = 8
    # A: [1, 1, 0] -> 2/12 * (1 + 2) ; B: [0, 0, 0, 0, 1] -> 2/30 * 5
    assert b.scores()["A"] == pytest.approx(0.5 + 0.05 * math.sqrt(2 * math.log(n) / 3))
    assert b.scores()["B"] == pytest.approx(1 / 3 + 0.05 * math.sqrt(2 * math.log(n) / 5))


def test_bandit_prefers_the_arm_that_improves() -> None:
    space = _space()
    improving = _Fixed(list(range(499, 0, -1)), "Down")  # a new best every time
    stuck = _Fixed([700], "Stuck")                         # one value, then duplicates
    b = AUCBandit(arms=[improving, stuck], window=100, c=0.05)
    log = run_technique(b, space, lambda c: float(c["a"]), budget=150, seed=0)
    uses = b.state_dict()["uses"]
    assert uses["Down"] > 3 * uses["Stuck"]
    assert log.best_value < 450


def test_restore_rebuilds_the_same_history() -> None:
    space = SearchSpace().add(*[Float(f"x{i}", -2.0, 2.0) for i in range(3)])
    objective = lambda c: sum((c[f"x{i}"] - 0.3) ** 2 for i in range(3))
    original = AUCBandit(arms=["NelderMead", "GreedyMutation", "Random"], window=40, c=0.05)
    log = run_technique(original, space, objective, budget=120, seed=4)
    resumed = AUCBandit(arms=["NelderMead", "GreedyMutation", "Random"], window=40, c=0.05)
    resumed.bind(space, budget=120, rng=np.random.default_rng(99))
    resumed.restore(log.trials)
    assert list(resumed.auc.history) == list(original.auc.history)
    assert resumed.scores() == pytest.approx(original.scores())
    assert resumed.best_value == log.best_value


def test_bad_window_and_c_name_the_argument() -> None:
    with pytest.raises(TechniqueError, match="window"):
        AUCBandit(window=0)
    with pytest.raises(TechniqueError, match="c "):
        AUCBandit(c=-1.0)
    with pytest.raises(TechniqueError, match="arms"):
        AUCBandit(arms=[])


def test_round_robin_takes_turns() -> None:
    space = _space()
    rr = RoundRobin(arms=[_Fixed(list(range(100)), "A"), _Fixed(list(range(200, 300)), "B")])
    log = run_technique(rr, space, lambda c: float(c["a"]), budget=10, seed=0)
    assert [t.technique for t in log.trials] == ["A", "B"] * 5


def test_credit_name_names_the_leaf() -> None:
    space = _space()
    b = AUCBandit(arms=[_Fixed([1], "A"), _Fixed([2], "B")])
    b.bind(space, budget=10, rng=np.random.default_rng(0))
    (c,) = b.propose(1)
    assert b.credit_name(space.config_hash(c)) == ("A" if c["a"] == 1 else "B")


class _Startup(_Fixed):
    """Test arm with a declared start-up phase (as csTuner's performance dataset)."""

    startup_trials = 5


def test_startup_off_ignores_a_declared_startup_phase() -> None:
    """With the option off (the default) the bandit picks and credits exactly as without it."""
    space = _space()
    objective = lambda c: float(c["a"])
    plain = AUCBandit(arms=[_Fixed(list(range(400, 0, -3)), "A"), _Fixed(list(range(900, 0, -7)), "B")],
                      window=50, c=0.05)
    log_plain = run_technique(plain, space, objective, budget=60, seed=3)
    declared = AUCBandit(arms=[_Startup(list(range(400, 0, -3)), "A"), _Fixed(list(range(900, 0, -7)), "B")],
                         window=50, c=0.05)
    log_declared = run_technique(declared, space, objective, budget=60, seed=3)
    assert [(t.config, t.technique) for t in log_declared.trials] == [(t.config, t.technique) for t in log_plain.trials]
    assert list(declared.auc.history) == list(plain.auc.history)
    assert "startup" not in declared.state_dict()


def test_startup_on_asks_the_arm_first_and_does_not_credit_it() -> None:
    space = _space()
    b = AUCBandit(arms=[_Fixed(list(range(900, 0, -7)), "B"), _Startup(list(range(400, 0, -3)), "A")],
                  window=50, c=0.05, startup=True)
    log = run_technique(b, space, lambda c: float(c["a"]), budget=30, seed=3)
    assert [t.technique for t in log.trials[:5]] == ["A"] * 5
    # the five start-up results are not in the window; everything after them is
    assert len(b.auc.history) == len(log.trials) - 5
    assert b.state_dict()["startup"]["A"] >= 5


def test_startup_resume_replays_the_same_window() -> None:
    space = _space()
    arms = lambda: [_Fixed(list(range(900, 0, -7)), "B"), _Startup(list(range(400, 0, -3)), "A")]
    original = AUCBandit(arms=arms(), window=50, c=0.05, startup=True)
    log = run_technique(original, space, lambda c: float(c["a"]), budget=30, seed=3)
    resumed = AUCBandit(arms=arms(), window=50, c=0.05, startup=True)
    resumed.bind(space, budget=30, rng=np.random.default_rng(9))
    resumed.restore(log.trials)
    assert list(resumed.auc.history) == list(original.auc.history)


class _Batch(BaseTechnique):
    """Test arm: a generation of ``size`` configurations at a time, the next only after all were told."""

    name = "Batch"
    summary = "test arm"

    def __init__(self, size: int) -> None:
        super().__init__()
        self.size, self.open, self.next = size, 0, 0

    def propose(self, n: int) -> list[dict[str, Any]]:
        if self.open:
            return []  # waits for its generation, as DE and the GA do
        out = [{"a": self.next + k} for k in range(self.size)]
        self.next += self.size
        self.open = self.size
        return out

    def observe(self, trial: Trial) -> None:
        super().observe(trial)
        self.open -= 1


def test_fill_proposes_what_the_arms_leave_with_several_workers_and_is_credited() -> None:
    space = _space()
    b = AUCBandit(arms=[_Batch(4)], fill="NormalGreedyMutation", window=10, c=0.05)
    b.bind(space, budget=100, rng=np.random.default_rng(0))
    b.workers = 1
    assert len(b.propose(10)) == 4          # one worker: the arm alone, never the fill technique
    assert b.filled == 0
    b.workers = 8
    got = b.propose(6)                     # the arm waits for its generation: the fill technique answers
    assert len(got) == 6 and b.filled == 6
    assert all(0 <= c["a"] <= 1000 for c in got)
    assert len({space.config_hash(c) for c in got}) == 6
    assert all(b.credit_name(space.config_hash(c)) == "fill:NormalGreedyMutation" for c in got)
    # a filled configuration's result goes to the fill technique, not to the arm's generation or credit
    arm = b.arms[0]
    assert isinstance(arm, _Batch)
    c = got[0]
    b.observe(Trial(config=c, config_hash=space.config_hash(c), value=1.0, state="OK",
                    technique="fill:NormalGreedyMutation"))
    assert arm.open == 4 and list(b.auc.history) == []
    assert b.fill is not None and b.fill.best_value == 1.0
    assert b.state_dict()["fill"] == {"technique": "NormalGreedyMutation", "proposed": 6}


def test_a_bad_fill_names_the_argument_and_the_fix() -> None:
    with pytest.raises(TechniqueError, match="fill must be a technique name"):
        AUCBandit(arms=["GA"], fill=3)  # type: ignore[arg-type]
    with pytest.raises(TechniqueError, match="NoSuchTechnique"):
        AUCBandit(arms=["GA"], fill="NoSuchTechnique")


def test_fill_leaves_the_arms_generators_and_a_sequential_search_unchanged() -> None:
    space = SearchSpace().add(Integer("a", 0, 60), Integer("b", 0, 60))

    def f(c: dict[str, Any]) -> float:
        return float((c["a"] - 17) ** 2 + (c["b"] - 40) ** 2)

    plain = run_technique(AUCBandit(arms=["DifferentialEvolution", "GA"]), space, f, budget=80, seed=3)
    filled = run_technique(AUCBandit(arms=["DifferentialEvolution", "GA"], fill="NormalGreedyMutation"),
                           space, f, budget=80, seed=3)
    assert [t.config for t in plain.trials] == [t.config for t in filled.trials]
