"""Island GA: ring migration in one process, non-blocking islands, the technique on a real space."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("ensemble.technique")

from techniques.island_ga import IslandModel, LocalRing

CARD = [32, 32, 32]
OPT = (30, 1, 17)
SEED = (30, 1, 16)    # near the optimum; only island 0 starts from it


def f(g) -> float:
    return float(sum((a - b) ** 2 for a, b in zip(g, OPT)))


def _model(n: int, seed: int = 0, **kw) -> IslandModel:
    return IslandModel(CARD, lambda g: {"g": g}, np.random.default_rng(seed), island_ids=list(range(n)),
                       n_islands=n, transport=LocalRing(), population=8, migration_interval=2,
                       migrants=2, seeds={0: [SEED]}, **kw)


def _run(m: IslandModel, rounds: int, islands=None) -> None:
    for _ in range(rounds):
        for i, g in m.ask(16):
            if islands is None or i in islands:
                m.tell(i, g, f(g))


def test_seeded_individual_travels_around_the_ring() -> None:
    m = _model(5)
    _run(m, 12)
    received = [e for e in m.migrations if e["event"] == "received"]
    # Island 2 is not a neighbour of island 0 on a ring of 5: the seed reaches it via 1 or 3.
    into2 = [e for e in received if e["island"] == 2 and list(SEED) in e["genomes"]]
    assert into2 and all(e["from"] in (1, 3) for e in into2)
    # and it took part in island 2's evolution: island 2 knows the seed's fitness.
    assert SEED in m.islands[2].fitness
    sent = [e for e in m.migrations if e["event"] == "sent"]
    assert {(e["island"], e["to"]) for e in sent if e["island"] == 0} == {(0, 1), (0, 4)}
    assert all(e["generation"] % 2 == 0 for e in sent)


def test_migration_helps_unseeded_islands() -> None:
    with_ring = _model(4, seed=3)
    _run(with_ring, 8)
    isolated = IslandModel(CARD, lambda g: {"g": g}, np.random.default_rng(3), island_ids=[0, 1, 2, 3],
                           n_islands=4, transport=LocalRing(), population=8, migration_interval=1000,
                           migrants=2, seeds={0: [SEED]})
    _run(isolated, 8)
    best = lambda m, i: m.islands[i].best(1)[0][1]
    assert max(best(with_ring, i) for i in (1, 2, 3)) <= 1.0
    assert isolated.migrations == []
    assert min(best(isolated, i) for i in (1, 2, 3)) > max(best(with_ring, i) for i in (1, 2, 3))


def test_a_stalled_island_does_not_stop_the_others() -> None:
    m = _model(3)
    _run(m, 10, islands={0, 1})          # island 2 never gets results back (a slow rank)
    assert m.islands[2].generation == 0
    assert m.islands[0].generation >= 4 and m.islands[1].generation >= 4


def test_same_seed_same_migrations() -> None:
    a, b = _model(3, seed=9), _model(3, seed=9)
    _run(a, 6)
    _run(b, 6)
    assert a.migrations == b.migrations


def test_island_ga_technique_on_a_constrained_space() -> None:
    from ensemble import Integer, PowerOfTwo, SearchSpace, Trial
    from ensemble.registry import create_technique

    space = SearchSpace().add(PowerOfTwo("wx", 1, 256), PowerOfTwo("wy", 1, 256), Integer("u", 1, 8))
    space.require("wx * wy <= 256")
    target = {"wx": 32, "wy": 8, "u": 3}

    def f(c: dict) -> float:
        return float(abs(np.log2(c["wx"] / 32)) + abs(np.log2(c["wy"] / 8)) + abs(c["u"] - 3))

    tech = create_technique("IslandGA", seed=4, islands=3, population=8, migration_interval=2,
                            island_seeds={0: [target]})
    tech.bind(space, budget=None, rng=np.random.default_rng(4))
    seen: set[str] = set()
    n = 0
    while not tech.done and len(seen) < 150:
        batch = tech.propose(4)
        assert batch or tech.done
        for cfg in batch:
            n += 1
            assert space.is_valid(cfg)
            h = space.config_hash(cfg)
            assert h not in seen           # known configurations are never proposed again
            seen.add(h)
            tech.observe(Trial(config=cfg, config_hash=h, value=f(cfg), state="OK", technique="IslandGA",
                               duplicate=False, evaluation=n))
    assert tech.best_value == 0.0
    got = {e["island"] for e in tech.migrations if e["event"] == "received" and e["from"] == 0}
    assert got == {1, 2}
    state = tech.state_dict()
    assert set(state["islands"]) == {"0", "1", "2"} and state["migrations"]


def test_island_ga_as_an_arm_of_the_auc_bandit() -> None:
    from ensemble import Integer, SearchSpace, Trial
    from ensemble.registry import create_technique

    space = SearchSpace().add(Integer("x", 0, 31), Integer("y", 0, 31))
    bandit = create_technique("AUCBandit", seed=2, arms=["IslandGA", "Random"])
    bandit.bind(space, budget=300, rng=np.random.default_rng(2))
    credited: dict[str, int] = {}
    for n in range(300):
        batch = bandit.propose(1)
        if not batch:
            continue
        cfg = batch[0]
        h = space.config_hash(cfg)
        name = bandit.credit_name(h) or ""
        credited[name] = credited.get(name, 0) + 1
        bandit.observe(Trial(config=cfg, config_hash=h, value=float((cfg["x"] - 20) ** 2 + (cfg["y"] - 3) ** 2),
                             state="OK", technique=name, duplicate=False, evaluation=n))
    assert credited.get("IslandGA", 0) > 0
    island = next(a for a in bandit.arms if a.name == "IslandGA")
    assert island.model is not None and any(ga.generation > 0 for ga in island.model.islands.values())
    assert bandit.best_value <= 2.0


def test_restore_rebuilds_islands_from_the_stored_history() -> None:
    from ensemble import Integer, SearchSpace, Trial
    from ensemble.registry import create_technique

    space = SearchSpace().add(Integer("x", 0, 31), Integer("y", 0, 31))
    f = lambda c: float((c["x"] - 20) ** 2 + (c["y"] - 3) ** 2)
    history = [{"x": x, "y": y} for x in range(0, 32, 3) for y in range(0, 32, 5)]
    trials = [Trial(config=c, config_hash=space.config_hash(c), value=f(c), state="OK", technique="IslandGA",
                    duplicate=False, evaluation=i + 1) for i, c in enumerate(history)]
    tech = create_technique("IslandGA", seed=1, islands=2, population=6)
    tech.bind(space, budget=None, rng=np.random.default_rng(1))
    tech.restore(trials)
    best = min(history, key=f)
    first_island = tech.model.islands[0]
    assert tech._genome(best) in first_island.fitness       # the best stored point seeds island 0
    proposals = tech.propose(12)
    known = {t.config_hash for t in trials}
    assert proposals and all(space.config_hash(c) not in known for c in proposals)
