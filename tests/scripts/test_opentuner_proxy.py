"""scripts/_opentuner_proxy.py: OpenTuner 0.8.8's own search through a subprocess, in our runs.

The tests that run OpenTuner need an interpreter with it: ``OPENTUNER_PYTHON``
(with ``OPENTUNER_PYTHONPATH``) or the peer venv ``.bench/opentuner-venv``
(``python -m scripts._peers opentuner``); without either they are skipped.
"""

from __future__ import annotations

import json
import math
import sqlite3
import sys
from typing import Any

import numpy as np
import pytest

from ensemble.errors import TechniqueError
from ensemble.space import (
    Boolean,
    Enum,
    Float,
    Integer,
    LogFloat,
    Permutation,
    PowerOfTwo,
    SearchSpace,
)
from ensemble.technique import Trial
from ensemble.tune import tune
from scripts._opentuner_proxy import NAME, OpenTunerProxy, _mapping, close_all

TECH = "scripts._opentuner_proxy:OpenTunerProxy"


def _interpreter() -> tuple[str, str | None] | None:
    import os

    from scripts._peers import peer_available, peer_python

    if os.environ.get("OPENTUNER_PYTHON"):
        return os.environ["OPENTUNER_PYTHON"], os.environ.get("OPENTUNER_PYTHONPATH")
    if peer_available("opentuner"):
        return str(peer_python("opentuner", create=False)), None
    return None


@pytest.fixture
def opentuner(monkeypatch):  # type: ignore[no-untyped-def]
    found = _interpreter()
    if found is None:
        pytest.skip("no OpenTuner 0.8.8 interpreter: set OPENTUNER_PYTHON or run `python -m scripts._peers opentuner`")
    monkeypatch.setenv("OPENTUNER_PYTHON", found[0])
    if found[1]:
        monkeypatch.setenv("OPENTUNER_PYTHONPATH", found[1])
    else:
        monkeypatch.delenv("OPENTUNER_PYTHONPATH", raising=False)
    yield found
    close_all()


def _space() -> SearchSpace:
    """About one configuration in five of the product meets the constraint; 'one' has a single value."""
    s = SearchSpace(Integer("a", 0, 20), Integer("b", 0, 20), Enum("c", ["x", "y", "z"]), Boolean("d"),
                    PowerOfTwo("one", 1, 1), Float("w", 0.0, 1.0))
    s.require("a + b <= 12", name="sum")
    return s


def _f(cfg: dict[str, Any]) -> float:
    return (cfg["a"] - 8) ** 2 + (cfg["b"] - 3) ** 2 + 4 * (cfg["c"] != "y") + 2 * cfg["d"] + 3 * cfg["w"]


def _technique_state(db: str) -> dict[str, Any]:
    con = sqlite3.connect(db)
    try:
        (data,) = con.execute("SELECT data_json FROM run_state WHERE key = 'technique'").fetchone()
    finally:
        con.close()
    return json.loads(data)  # type: ignore[no-any-return]


def test_proposes_only_valid_in_range_configurations_and_respects_the_budget(opentuner, tmp_path) -> None:  # type: ignore[no-untyped-def]
    space = _space()
    seen: list[dict[str, Any]] = []

    def f(cfg: dict[str, Any]) -> float:
        assert space.is_valid(cfg), cfg   # a rejected configuration would be measured here
        seen.append(dict(cfg))
        return _f(cfg)

    db = str(tmp_path / "t.db")
    result = tune(f, space, test_limit=25, technique=TECH, seed=0, database=f"sqlite:///{db}")
    assert result.evaluations == 25 and len(seen) == 25
    assert len({space.config_hash(c) for c in seen}) == 25          # every measurement is a unique evaluation
    assert all(c["one"] == 1 and 0.0 <= c["w"] <= 1.0 for c in seen)
    state = _technique_state(db)
    assert state["opentuner"] == "0.8.8" and state["technique"] == "AUCBanditMetaTechniqueA"
    assert state["rejected"] > 0          # OpenTuner cannot see the constraint: some were rejected, none measured


def test_rejected_configurations_are_not_counted_and_results_reach_opentuner(opentuner, tmp_path) -> None:  # type: ignore[no-untyped-def]
    space = _space()
    calls = []

    def f(cfg: dict[str, Any]) -> float:
        calls.append(cfg)
        return _f(cfg)

    db = str(tmp_path / "t.db")
    result = tune(f, space, test_limit=40, technique=TECH, seed=1, database=f"sqlite:///{db}")
    con = sqlite3.connect(db)
    try:
        (requests,) = con.execute("SELECT COUNT(*) FROM requests WHERE duplicate = 0").fetchone()
    finally:
        con.close()
    assert requests == len(calls) == 40 and _technique_state(db)["rejected"] > 0
    # OpenTuner learns from the results it is told: far better than a typical random pick
    random_values = [_f(c) for c in space.sample(np.random.default_rng(7), 200)]
    assert result.best_value is not None and result.best_value < np.median(random_values)
    assert result.best_value <= sorted(random_values)[50]     # within the best quarter (12 seeds tried: all are)


def test_the_same_seed_gives_the_same_sequence(opentuner) -> None:  # type: ignore[no-untyped-def]
    space = _space()

    def run(seed: int) -> list[tuple[Any, ...]]:
        calls: list[tuple[Any, ...]] = []

        def f(cfg: dict[str, Any]) -> float:
            calls.append(tuple(cfg.values()))
            return _f(cfg)

        tune(f, space, test_limit=20, technique=TECH, seed=seed, database="sqlite://")
        return calls

    first = run(3)
    assert run(3) == first          # one worker: OpenTuner 0.8.8 seeded through random and numpy.random
    assert run(4) != first


def test_several_proposals_are_outstanding_at_once_and_seeds_are_requested(opentuner) -> None:  # type: ignore[no-untyped-def]
    space = _space()
    seed_cfg = {"a": 1, "b": 1, "c": "x", "d": False, "one": 1, "w": 0.5}
    proxy = OpenTunerProxy(seed=0, seeds=[seed_cfg], parallelism=4)
    proxy.bind(space, budget=20, rng=np.random.default_rng(0))
    batch = proxy.propose(6)
    assert seed_cfg in batch                        # OpenTuner's --seed-configuration is requested at once
    assert len(batch) >= 2 and all(space.is_valid(c) for c in batch)
    assert len({space.config_hash(c) for c in batch}) == len(batch)
    for c in reversed(batch):                       # results come back in any order
        proxy.observe(Trial(config=c, config_hash=space.config_hash(c), value=_f(c), state="OK", technique=NAME))
    assert proxy._outstanding() == 0
    more = proxy.propose(3)
    assert more and all(space.is_valid(c) for c in more)
    assert not {space.config_hash(c) for c in more} & {space.config_hash(c) for c in batch}
    proxy.close()


def test_parallel_workers_keep_to_the_budget(opentuner, tmp_path) -> None:  # type: ignore[no-untyped-def]
    space = _space()
    seen = []

    def f(cfg: dict[str, Any]) -> float:
        assert space.is_valid(cfg)
        seen.append(cfg)
        return _f(cfg)

    result = tune(f, space, test_limit=24, technique=TECH, seed=2, parallelism=4,
                  database=f"sqlite:///{tmp_path / 'p.db'}")
    assert result.evaluations == 24 and len(seen) == 24


def test_a_missing_interpreter_names_the_fix(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OPENTUNER_PYTHON", "/nonexistent/python3")
    with pytest.raises(TechniqueError, match=r"OPENTUNER_PYTHON='/nonexistent/python3'.*gpu_env\.sh.*\.whl/opentuner"):
        tune(_f, _space(), test_limit=5, technique=TECH, seed=0, database="sqlite://")


def test_an_interpreter_without_opentuner_names_the_fix(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("OPENTUNER_PYTHON", sys.executable)   # ours: numpy, but no OpenTuner 0.8.8
    monkeypatch.delenv("OPENTUNER_PYTHONPATH", raising=False)
    with pytest.raises(TechniqueError, match=r"OpenTuner 0\.8\.8 not importable with OPENTUNER_PYTHON=.*gpu_env\.sh"):
        tune(_f, _space(), test_limit=5, technique=TECH, seed=0, database="sqlite://")


def test_the_mapping_covers_every_parameter_kind() -> None:
    space = SearchSpace(Integer("i", 2, 9), PowerOfTwo("p", 1, 64), Enum("e", ["u", "v"]), Integer("fixed", 5, 5),
                        Float("f", -1.0, 1.0), LogFloat("g", 1e-3, 1.0), Permutation("perm", ["x", "y", "z"]))
    params, fixed = _mapping(space)
    assert fixed == {"fixed": 5}
    assert [(p.name, k) for p, k in params] == [("i", "index"), ("p", "index"), ("e", "index"), ("f", "float"),
                                                ("g", "logfloat"), ("perm", "perm")]
    proxy = OpenTunerProxy()
    proxy.space, proxy._params, proxy._fixed = space, params, fixed
    for cfg in space.sample(np.random.default_rng(0), 20):
        back = proxy._to_config(proxy._to_x(cfg))
        assert back is not None and space.config_hash(back) == space.config_hash(cfg)
    assert proxy._to_config([8, 0, 0, 0.0, 0.1, [0, 1, 2]]) is None        # index 8 is outside i's 8 values
    assert proxy._to_config([0, 0, 0, 0.0, 0.1, [0, 0, 2]]) is None        # not a permutation
    clipped = proxy._to_config([0, 6, 1, 5.0, 0.1, [2, 0, 1]])
    assert clipped is not None and math.isclose(clipped["f"], 1.0)   # floats clipped to their range
