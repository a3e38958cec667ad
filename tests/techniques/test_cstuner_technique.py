"""CsTuner as a technique: phases, grouping on a real space, done, saved evaluations."""

from __future__ import annotations

import logging
import math

import numpy as np
import pytest

pytest.importorskip("ensemble.technique")

from ensemble import Integer, SearchSpace, Trial
from ensemble.registry import create_technique


def f(c: dict) -> float:
    return float((c["a"] * c["b"] - 16) ** 2 + (c["c"] - 3) ** 2 + (c["d"] + c["e"]) ** 2)


def _space() -> SearchSpace:
    s = SearchSpace()
    s.add(Integer("a", 1, 8), Integer("b", 1, 8), Integer("c", 0, 7), Integer("d", -4, 4), Integer("e", -4, 4))
    return s


def _drive(tech, space, f, limit: int = 5000) -> int:
    evaluations = 0
    seen: set[str] = set()
    while not tech.done and evaluations < limit:
        batch = tech.propose(8)
        if tech.done:
            break
        assert batch, "CsTuner proposed nothing while not done and nothing pending"
        for cfg in batch:
            assert space.is_valid(cfg)
            h = space.config_hash(cfg)
            assert h not in seen, "CsTuner re-proposed a configuration it already knows"
            seen.add(h)
            evaluations += 1
            tech.observe(Trial(config=cfg, config_hash=h, value=f(cfg), state="OK",
                               technique="CsTuner", duplicate=False, evaluation=evaluations))
    return evaluations


def test_cstuner_groups_searches_and_finishes() -> None:
    space = _space()
    tech = create_technique("CsTuner", seed=1)
    tech.bind(space, budget=None, rng=np.random.default_rng(1))
    n = _drive(tech, space, f)
    assert tech.done and tech.propose(4) == []
    assert sorted(sorted(g) for g in tech.groups) == [["a", "b"], ["c"], ["d", "e"]]
    assert tech.best_value == 0.0
    state = tech.state_dict()
    assert state["phase"] == "done" and len(state["reports"]) == 3
    # small groups (c: 8 values) are exhaustive; the report accounts every evaluation
    modes = {tuple(sorted(r["group"])): r["mode"] for r in state["reports"]}
    assert modes[("c",)] == "exhaustive"
    assert n < 8 * 8 * 8 * 9 * 9


def test_cstuner_plateau_group_saves_evaluations(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="ensemble.techniques.cstuner")
    s = SearchSpace()
    s.add(Integer("x", 0, 63), Integer("y", 0, 63))
    tech = create_technique("CsTuner", seed=2, population=20, generations=10)
    tech.bind(s, budget=None, rng=np.random.default_rng(2))
    _drive(tech, s, lambda c: 1.0)
    assert tech.done
    saved = tech.state_dict()["saved"]
    assert saved >= 100
    assert all(r["reason"] in ("cv", "exhaustive") for r in tech.state_dict()["reports"])
    # the report line users see in the log
    lines = [r.getMessage() for r in caplog.records if "saved" in r.getMessage()]
    assert lines and all("fixed budget of 200" in m for m in lines if "(cv)" in m)


def test_bandit_stops_asking_a_finished_cstuner() -> None:
    s = SearchSpace()
    s.add(Integer("x", 0, 5), Integer("y", 0, 5))
    bandit = create_technique("AUCBandit", seed=1, arms=["CsTuner", "GA"])
    bandit.bind(s, budget=None, rng=np.random.default_rng(1))
    cs = bandit.arms[0]
    n = 0
    while n < 300:
        for cfg in bandit.propose(4):
            n += 1
            h = s.config_hash(cfg)
            bandit.observe(Trial(config=cfg, config_hash=h, value=float((cfg["x"] - 2) ** 2 + cfg["y"]),
                                 state="OK", technique=bandit.credit_name(h) or "", duplicate=False,
                                 evaluation=n))
        if cs.done:
            break
    assert cs.done
    def refuse(n: int) -> list:
        raise AssertionError("the bandit asked a technique that reported done")

    cs.propose = refuse
    for _ in range(10):                   # the other arm keeps going; CsTuner is never asked
        for cfg in bandit.propose(4):
            n += 1
            h = s.config_hash(cfg)
            bandit.observe(Trial(config=cfg, config_hash=h, value=1.0, state="OK",
                                 technique=bandit.credit_name(h) or "", duplicate=False, evaluation=n))


def test_failures_do_not_break_grouping() -> None:
    space = _space()
    tech = create_technique("CsTuner", seed=3)
    tech.bind(space, budget=None, rng=np.random.default_rng(3))
    _drive(tech, space, lambda c: math.inf if c["c"] == 0 else f(c))
    assert tech.done and tech.best_value == 0.0
