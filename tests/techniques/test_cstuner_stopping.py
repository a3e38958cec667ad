"""Approximate stopping and the re-indexed group search."""

from __future__ import annotations

import math

import numpy as np
import pytest

from techniques.cstuner.group_search import GroupSearch
from techniques.cstuner.stopping import ApproximateStop, top_n_cv


def _drive(search: GroupSearch, f) -> int:
    """Run a group search to the end with a synchronous objective; return measurements."""
    measured = 0
    while not search.done:
        batch = search.ask(7)
        assert batch, "a search that is not done must propose while nothing is pending"
        for cfg in batch:
            measured += 1
            search.tell(cfg, f(cfg))
    return measured


def test_top_n_cv() -> None:
    assert top_n_cv([5.0, 1.0, 1.0, 1.0], 3) == 0.0
    assert math.isinf(top_n_cv([1.0, 2.0], 3))
    assert top_n_cv([1.0, 3.0, 100.0], 2) == pytest.approx(0.5)


def test_plateau_stops_early_and_reports_saved_evaluations() -> None:
    domains = {"x": list(range(64)), "y": list(range(64))}
    flat = lambda cfg: 1.0
    stop = ApproximateStop(top_n=10, threshold=0.01, min_generations=2)
    s = GroupSearch(["x", "y"], domains, {"x": 0, "y": 0}, lambda c: True,
                    np.random.default_rng(0), population=20, generations=10, stop=stop)
    measured = _drive(s, flat)
    rep = s.report()
    assert rep is not None and rep.reason == "cv" and rep.mode == "ga"
    assert rep.generations == 2
    assert rep.budget == 200 and rep.evaluations == measured <= 40
    assert rep.saved == rep.budget - rep.evaluations >= 160
    assert rep.to_json()["saved"] == rep.saved


def test_rugged_function_runs_to_budget_without_stopping() -> None:
    domains = {"x": list(range(64)), "y": list(range(64))}
    f = lambda c: 1.0 + ((c["x"] * 37 + c["y"] * 11) % 64)
    s = GroupSearch(["x", "y"], domains, {"x": 0, "y": 0}, lambda c: True,
                    np.random.default_rng(1), population=10, generations=5,
                    stop=ApproximateStop(top_n=10, threshold=0.0001))
    _drive(s, f)
    rep = s.report()
    assert rep is not None and rep.reason == "budget" and rep.generations == 5


def test_small_group_is_exhaustive_over_reindexed_valid_values() -> None:
    domains = {"x": [1, 2, 4, 8, 16], "y": [1, 2, 4, 8, 16], "z": [0, 1]}
    valid = lambda c: c["x"] * c["y"] <= 8
    s = GroupSearch(["x", "y"], domains, {"x": 1, "y": 1, "z": 1}, valid,
                    np.random.default_rng(0), population=20)
    assert s.mode == "exhaustive"
    assert s.domains == [[1, 2, 4, 8], [1, 2, 4, 8]]   # 16 never valid: dropped (re-indexed)
    seen = []
    _drive(s, lambda c: seen.append(c) or float(c["x"] + 1.0 / c["y"]))
    assert all(valid(c) and c["z"] == 1 for c in seen)
    assert len(seen) == 10  # pairs with x*y <= 8
    best, _v = s.best()
    assert best == {"x": 1, "y": 8, "z": 1} and s.report().reason == "exhaustive"


def test_ga_mode_never_proposes_invalid_and_finds_optimum() -> None:
    domains = {"x": list(range(32)), "y": list(range(32))}
    valid = lambda c: (c["x"] + c["y"]) % 3 != 0
    f = lambda c: float((c["x"] - 20) ** 2 + (c["y"] - 7) ** 2)
    s = GroupSearch(["x", "y"], domains, {"x": 1, "y": 0}, valid, np.random.default_rng(3),
                    population=16, generations=30, stop=ApproximateStop(threshold=0.0))
    proposed = []
    while not s.done:
        for cfg in s.ask(16):
            proposed.append(cfg)
            s.tell(cfg, f(cfg))
    assert all(valid(c) for c in proposed)
    assert len({(c["x"], c["y"]) for c in proposed}) == len(proposed)  # never re-measured
    assert s.best()[1] <= 2.0


def test_known_values_are_not_proposed_again() -> None:
    domains = {"x": list(range(4))}
    cache = {0: 5.0, 1: 3.0}
    s = GroupSearch(["x"], domains, {"x": 0}, lambda c: True, np.random.default_rng(0),
                    known=lambda c: cache.get(c["x"]))
    asked = s.ask(10)
    assert sorted(c["x"] for c in asked) == [2, 3]


def test_same_seed_same_trajectory() -> None:
    domains = {"x": list(range(50)), "y": list(range(50))}
    f = lambda c: float(abs(c["x"] - 30) + abs(c["y"] - 10))

    def run(seed: int) -> list:
        s = GroupSearch(["x", "y"], domains, {"x": 0, "y": 0}, lambda c: True,
                        np.random.default_rng(seed), population=8, generations=6)
        out = []
        while not s.done:
            for cfg in s.ask(8):
                out.append((cfg["x"], cfg["y"]))
                s.tell(cfg, f(cfg))
        return out

    assert run(5) == run(5)
    assert run(5) != run(6)
