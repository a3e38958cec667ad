"""One conformance suite for every registered technique.

Each technique this distribution declares (entry points ``ensemble.techniques``) (IslandGA and CsTuner
included) is run through the real search driver on the in-memory store (its dedup and budget
rules) on small spaces that exercise constraints, failures and every
parameter kind.  What must hold for all of them: every proposal is a valid
configuration, ``propose(n)`` returns at most n, the budget of unique
evaluations is never exceeded, the same seed gives the same trajectory,
different seeds give different ones, and a space where most points fail is
still searched (something finite is found).
"""

from __future__ import annotations

import hashlib
import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ensemble.registry import builtin_technique_names, create_technique
from ensemble.space import (
    Boolean,
    Enum,
    Float,
    Integer,
    Permutation,
    PowerOfTwo,
    SearchSpace,
)
from tests.techniques.driven import run_technique

ROOT = Path(__file__).resolve().parents[2]

#: every registered technique (built-in names; third-party entry points are not ours to test)
OURS = builtin_technique_names()


def mixed_space() -> SearchSpace:
    """Every kind of parameter, with a constraint that removes most of the product."""
    s = SearchSpace()
    s.add(PowerOfTwo("wx", 1, 64), PowerOfTwo("wy", 1, 64), Integer("unroll", 1, 8),
          Float("alpha", -1.0, 1.0), Enum("memory", ["global", "local", "image"]),
          Boolean("vector"), Permutation("order", ["i", "j", "k"]))
    s.require("wx * wy <= 64")
    s.require(lambda c: not (c["memory"] == "image" and c["vector"]))
    return s


def mixed_objective(c: dict[str, Any]) -> float:
    order_penalty = 0.0 if c["order"] == ["k", "j", "i"] else 1.0 + c["order"].index("i")
    return (abs(math.log2(c["wx"]) - 3) + abs(math.log2(c["wy"]) - 1) + abs(c["unroll"] - 4) * 0.5
            + (c["alpha"] - 0.25) ** 2 + {"global": 2.0, "local": 0.0, "image": 1.0}[c["memory"]]
            + (0.0 if c["vector"] else 0.5) + order_penalty)


def failing_objective(c: dict[str, Any]) -> float:
    """About 85 % of the configurations fail (deterministically, by hash)."""
    h = int(hashlib.sha256(json.dumps(c, sort_keys=True).encode()).hexdigest()[:8], 16)
    return mixed_objective(c) if h % 100 < 15 else math.inf


def run(name: str, space: SearchSpace, objective: Any, *, budget: int, seed: int, batch: int = 1):
    return run_technique(create_technique(name), space, objective, budget=budget, seed=seed, batch=batch)


@pytest.mark.parametrize("name", OURS)
def test_every_proposal_is_valid_and_budget_is_respected(name: str) -> None:
    space = mixed_space()
    for batch in (1, 5):
        log = run(name, space, mixed_objective, budget=60, seed=3, batch=batch)
        assert log.proposals, f"{name} proposed nothing"
        assert all(space.is_valid(c) for c in log.proposals), f"{name} proposed an invalid configuration"
        assert max(log.batch_sizes) <= batch
        assert log.unique <= 60
        assert math.isfinite(log.best_value)


@pytest.mark.parametrize("name", OURS)
def test_same_seed_same_trajectory_different_seed_differs(name: str) -> None:
    space = mixed_space()
    a = run(name, space, mixed_objective, budget=40, seed=11)
    b = run(name, space, mixed_objective, budget=40, seed=11)
    c = run(name, space, mixed_objective, budget=40, seed=12)
    assert a.hashes == b.hashes
    assert a.hashes != c.hashes


@pytest.mark.parametrize("name", OURS)
def test_mostly_failing_space_is_searched(name: str) -> None:
    space = mixed_space()
    log = run(name, space, failing_objective, budget=80, seed=5)
    assert all(space.is_valid(c) for c in log.proposals)
    failures = sum(1 for t in log.trials if not t.duplicate and t.state != "OK")
    assert failures > 0
    assert math.isfinite(log.best_value), f"{name} found no working configuration in 80 evaluations"


def flag_space() -> SearchSpace:
    """Compiler/HLS-style levels: None ("option not given") beside numbers and strings."""
    return SearchSpace().add(Enum("unroll", [None, 2, 4, 8]), Enum("sched", [None, "asap", "alap"]),
                             Enum("pipe", [None, True, False]), Integer("x", 0, 9),
                             Enum("ratio", [None, 0.5, 1]))


def flag_objective(c: dict[str, Any]) -> float:
    return ((0 if c["unroll"] is None else c["unroll"]) + (c["sched"] == "asap") + abs(c["x"] - 3)
            + (0.0 if c["ratio"] is None else c["ratio"]))


@pytest.mark.parametrize("name", OURS)
def test_levels_of_mixed_types(name: str) -> None:
    """Levels Python cannot compare with each other (None < 2 fails) never break a technique."""
    space = flag_space()
    log = run(name, space, flag_objective, budget=40, seed=4)
    assert log.proposals and all(space.is_valid(c) for c in log.proposals)
    assert math.isfinite(log.best_value)


@pytest.mark.parametrize("name", OURS)
def test_small_space_ends_without_hanging(name: str) -> None:
    """A space smaller than the budget: the run ends (space exhausted or only repeats)."""
    space = SearchSpace().add(Integer("a", 0, 3), Enum("b", ["x", "y"]))
    space.require("a != 2")
    log = run(name, space, lambda c: c["a"] + (c["b"] == "y"), budget=50, seed=1)
    assert log.unique <= 6
    assert all(space.is_valid(c) for c in log.proposals)
    assert log.best_value == 0.0 or name != "Random"


@pytest.mark.parametrize("name", OURS)
def test_continuous_progress(name: str) -> None:
    """Every technique beats its own first evaluation on a smooth bowl."""
    space = SearchSpace().add(*[Float(f"x{i}", -2.0, 2.0) for i in range(3)])
    log = run(name, space, lambda c: sum((c[f"x{i}"] - 0.5) ** 2 for i in range(3)), budget=150, seed=2)
    first = next(t.value for t in log.trials)
    assert log.best_value < first
    assert log.best_value < 0.5


_FRESH = """
import json, sys
sys.path.insert(0, {root!r})
from tests.techniques.test_conformance import mixed_space, mixed_objective, run, OURS
print(json.dumps({{n: run(n, mixed_space(), mixed_objective, budget=25, seed=7).hashes for n in OURS}}))
"""


@pytest.mark.slow
def test_same_result_in_a_fresh_process() -> None:
    # the fresh process runs while this one computes the same (one busy thread each; the CI box has two cores)
    fresh = subprocess.Popen([sys.executable, "-c", _FRESH.format(root=str(ROOT))], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True, cwd=str(ROOT))
    try:
        here = {n: run(n, mixed_space(), mixed_objective, budget=25, seed=7).hashes for n in OURS}
        out, err = fresh.communicate(timeout=600)
    finally:
        if fresh.poll() is None:
            fresh.kill()
            fresh.communicate()
    assert fresh.returncode == 0, err[-2000:]
    assert json.loads(out) == here


def test_suite_covers_the_registry() -> None:
    expected = {"AUCBandit", "RoundRobin", "Random", "NelderMead", "Torczon", "SimulatedAnnealing",
                "DifferentialEvolution", "GreedyMutation", "NormalGreedyMutation", "PatternSearch",
                "GA", "PSO", "default"}
    assert expected <= set(OURS)


def test_every_technique_has_a_one_line_summary() -> None:
    from ensemble.registry import load_technique

    for name in OURS:
        summary = getattr(load_technique(name), "summary", "")
        assert summary and "\n" not in summary, f"{name} needs a one-line `summary` for --list-techniques"


def test_unit_helpers_never_leave_the_space() -> None:
    from techniques.random_search import Random

    space = mixed_space()
    t = Random()
    t.bind(space, budget=10, rng=np.random.default_rng(0))
    rng = np.random.default_rng(1)
    for _ in range(200):
        assert space.is_valid(t.decode(rng.uniform(-0.5, 1.5, space.dims)))
