"""DLMT's ``avoid_failures`` option (docs/DOE.md, session 15): the run's own failures thin later candidate sets."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ensemble.errors import TechniqueError
from ensemble.space import Boolean, Enum, Integer, PowerOfTwo, SearchSpace
from ensemble.technique import Trial
from techniques.doe import DLMT


def space() -> SearchSpace:
    s = SearchSpace().add(PowerOfTwo("wx", 1, 64), PowerOfTwo("wy", 1, 64), Integer("unroll", 1, 8),
                          Enum("memory", ["global", "local", "image"]), Boolean("vector"), Integer("noise", 0, 5))
    s.require("wx * wy <= 256")
    return s


def fails(c: dict[str, Any]) -> bool:
    """The hidden failing region (not a constraint of the space): large work-groups and high unroll."""
    return c["wx"] * c["wy"] >= 64 or c["unroll"] >= 7


def objective(c: dict[str, Any]) -> float:
    if fails(c):
        return math.inf
    return (abs(math.log2(c["wx"]) - 3) + 0.8 * abs(math.log2(c["wy"]) - 2) + 0.3 * (c["unroll"] - 5) ** 2
            + {"global": 2.0, "local": 0.0, "image": 1.0}[c["memory"]] + (0.0 if c["vector"] else 0.5))


def _trial(s: SearchSpace, c: dict[str, Any], value: float, dup: bool = False) -> Trial:
    return Trial(config=c, config_hash=s.config_hash(c), value=value,
                 state="OK" if math.isfinite(value) else "FAILED", technique="dlmt", duplicate=dup)


def _run(tech: DLMT, s: SearchSpace, budget: int, seed: int, f: Any = objective,
         stop_after: int | None = None, history: list[Trial] | None = None) -> list[Trial]:
    """Ask/tell with no cap at the budget; every proposal valid, none twice, every proposal keeps ``tech.fixed``."""
    if history is None:
        tech.bind(s, budget=budget, rng=np.random.default_rng(seed))
    trials = list(history or [])
    seen = {t.config_hash for t in trials}
    ever: dict[str, Any] = {}
    while not tech.done:
        configs = tech.propose(3)
        if not configs:
            break
        for name, value in tech.fixed.items():
            assert ever.setdefault(name, value) == value, f"{name} fixed again at another level"
        for c in configs:
            if stop_after is not None and len(seen) >= stop_after:
                return trials  # killed: this proposal and the rest of the batch were never measured
            h = s.config_hash(c)
            assert h not in seen, f"{c} proposed a second time"
            assert s.is_valid(c), f"invalid proposal {c}"
            for name, value in tech.fixed.items():
                assert c[name] == value, f"{name} was fixed at {value} but {c[name]} was proposed"
            seen.add(h)
            t = _trial(s, c, f(c))
            tech.observe(t)
            trials.append(t)
    assert len(seen) <= budget
    return trials


def test_later_steps_propose_fewer_failing_points_with_the_option() -> None:
    """A hidden failing region: after step 1 (the same with and without), fewer failures with the option."""
    later = {False: 0, True: 0}
    first = {False: [], True: []}
    for avoid in (False, True):
        for seed in range(6):
            s = space()
            tech = DLMT(avoid_failures=avoid)
            trials = _run(tech, s, 60, seed)
            n1 = tech.steps[0]["design_size"]  # step 1: no failure seen yet, so the option changes nothing there
            first[avoid].append([t.config_hash for t in trials[:n1]])
            later[avoid] += sum(not math.isfinite(t.value) for t in trials[n1:])
    assert first[True] == first[False], "step 1 is unchanged by the option"
    assert later[True] < 0.7 * later[False], later


def test_candidate_sets_are_thinned_but_keep_the_floor() -> None:
    s = space()
    tech = DLMT(avoid_failures=True, candidates=400)
    _run(tech, s, 60, 3)
    dropped = [st["candidates"].get("dropped_likely_failures", 0) for st in tech.steps if "candidates" in st]
    assert dropped[0] == 0, "step 1 has seen no failure"
    assert any(dropped[1:]), "a later step dropped likely failures"
    for st in tech.steps[1:]:
        if "candidates" in st:
            kept = st["candidates"]["count"]
            before = kept + st["candidates"].get("dropped_likely_failures", 0)
            assert kept >= min(before, max(100, math.ceil(0.25 * before)))


def test_without_failures_the_option_changes_nothing() -> None:
    def ok(c: dict[str, Any]) -> float:
        return 1.0 + abs(math.log2(c["wx"]) - 3) + 0.3 * (c["unroll"] - 5) ** 2  # never fails

    runs = {}
    for avoid in (False, True):
        s = space()
        runs[avoid] = [t.config_hash for t in _run(DLMT(avoid_failures=avoid), s, 60, 4, f=ok)]
    assert runs[True] == runs[False]


def test_the_incumbent_neighbourhood_is_never_emptied() -> None:
    """Every neighbour likely to fail: the most likely one is still proposed."""
    s = space()
    tech = DLMT(avoid_failures=True)
    tech.bind(s, budget=60, rng=np.random.default_rng(0))
    centre = {"wx": 4, "wy": 4, "unroll": 3, "memory": "local", "vector": True, "noise": 2}
    neighbours = [{**centre, "unroll": 2}, {**centre, "unroll": 4}]
    tech._data = [(dict(n), math.inf) for n in neighbours] + [(dict(centre), 1.0)]
    kept = tech._likely([dict(n) for n in neighbours], 1)
    assert len(kept) == 1


def test_resume_with_the_option_replays_the_same_run() -> None:
    """Killed in the rest phase with failures in the history: the same proposals as an uninterrupted run."""
    s = space()
    full = DLMT(avoid_failures=True)
    reference = _run(full, s, 70, 8)
    assert any(not math.isfinite(t.value) for t in reference)
    assert full.rest_log is not None and full.rest_log["measured"] > 4
    kill_at = len(reference) - full.rest_log["measured"] // 2
    history = _run(DLMT(avoid_failures=True), s, 70, 8, stop_after=kill_at)
    resumed = DLMT(avoid_failures=True)
    resumed.bind(s, budget=70, rng=np.random.default_rng(8))
    resumed.restore(history)
    after = _run(resumed, s, 70, 8, history=history)[len(history):]
    assert not {t.config_hash for t in history} & {t.config_hash for t in after}
    assert [t.config_hash for t in history + after] == [t.config_hash for t in reference]


def test_bad_values_of_avoid_failures_name_the_argument_and_the_fix() -> None:
    with pytest.raises(TechniqueError, match="avoid_failures='yes'.*True.*False"):
        DLMT(avoid_failures="yes")
    with pytest.raises(TechniqueError, match="avoid_failures=True needs a failure classifier.*feasibility"):
        DLMT(avoid_failures=True, feasibility=None)
    assert DLMT().avoid_failures is False, "off by default (not adopted, docs/DOE.md session 15)"
