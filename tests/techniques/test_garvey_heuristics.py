"""The garvey technique visits the groups of Sec. 6.2 (on a small 2-D case), and the references."""

from __future__ import annotations

import math
from typing import Any

import pytest

from ensemble.space import Enum, PowerOfTwo, SearchSpace
from techniques.garvey import ExpS, Garvey, GarveyRand
from techniques.garvey.references import EXPERT_RULES
from tests.techniques.driven import run_technique

NAMES = {"WX": "wgx", "WY": "wgy", "WZ": "wgz", "BX": "bmx", "BY": "bmy", "BZ": "bmz",
         "CX": "cmx", "CY": "cmy", "CZ": "cmz", "VX": "vx"}
LOADINGS = {"global": {"fixed": {"mem": "global", "vx": 1, "bmx": 1}, "constants": {"VMIN": 1, "VMAX": 1}},
            "vec": {"fixed": {"mem": "global"}, "constants": {"VMIN": 2, "VMAX": 16}},
            "local": {"fixed": {"mem": "local", "vx": 1, "bmx": 1}, "constants": {"VMIN": 1, "VMAX": 1}}}


def space_2d(nx: int = 16, ny: int = 16) -> SearchSpace:
    """The paper's space (Sec. 4.7) for an nx x ny x 1 array: a 2-D case, z has one value."""
    s = SearchSpace()
    s.add(PowerOfTwo("wgx", 1, nx), PowerOfTwo("wgy", 1, ny), PowerOfTwo("wgz", 1, 1),
          PowerOfTwo("bmx", 1, 16), PowerOfTwo("bmy", 1, 1), PowerOfTwo("bmz", 1, 1),
          PowerOfTwo("cmx", 1, nx), PowerOfTwo("cmy", 1, ny), PowerOfTwo("cmz", 1, 1),
          PowerOfTwo("vx", 1, 16), Enum("mem", ["global", "local"]))
    s.require(f"wgx * bmx * cmx <= {nx}")
    s.require(f"wgy * bmy * cmy <= {ny}")
    s.require("vx == bmx")
    s.require("vx == 1 or mem == 'global'")
    return s


def hints(nx: int = 16, ny: int = 16) -> dict[str, Any]:
    return {"constants": {"NX": nx, "NY": ny, "NZ": 1}, "names": NAMES, "loadings": LOADINGS}


def objective(c: dict[str, Any]) -> float:
    return (abs(math.log2(c["wgx"]) - 3) + abs(math.log2(c["wgy"]) - 1) + 0.5 * abs(math.log2(c["cmy"]) - 2)
            + 0.3 * math.log2(c["cmx"]) + 0.1 * math.log2(c["vx"]))


class Spy(Garvey):
    """Records each group it explores: the parameters that vary and the candidates."""

    def _on_bind(self) -> None:
        super()._on_bind()
        self.groups: list[tuple[frozenset[str], list[dict[str, Any]]]] = []

    def _candidates(self, *a: Any, **k: Any) -> list[dict[str, Any]]:
        cands = super()._candidates(*a, **k)
        varying = frozenset(p for p in cands[0] if len({c[p] for c in cands}) > 1) if cands else frozenset()
        self.groups.append((varying, cands))
        return cands


def run(heuristic: str, loading: str = "global", repeats: int = 1) -> Spy:
    t = Spy(heuristic=heuristic, loading=loading, repeats=repeats, hints=hints())
    log = run_technique(t, space_2d(), objective, budget=10**6, seed=0, batch=10**4)
    assert t.done and all(space_2d().is_valid(c) for c in log.proposals)
    return t


def test_group_by_dimension_visits_x_then_y_then_z() -> None:
    t = run("dims")
    x, y, z = frozenset({"wgx", "cmx"}), frozenset({"wgy", "cmy"}), frozenset()  # z: nz = 1, one candidate
    assert [g for g, _ in t.groups] == [x, y, z, x, y, z]
    assert t.loading == "global"


def test_group_by_dimension_with_vectorisation_tunes_bx_equal_vx() -> None:
    t = run("dims", loading="vec", repeats=0)
    assert t.groups[0][0] == frozenset({"wgx", "bmx", "vx", "cmx"})
    assert all(c["bmx"] == c["vx"] >= 2 and c["mem"] == "global" for _, cs in t.groups for c in cs)


def test_group_by_optimisation_keeps_w_times_c_after_the_first_pass() -> None:
    t = run("opts", repeats=1)
    w, b, c = frozenset({"wgx", "wgy"}), frozenset(), frozenset({"cmx", "cmy"})
    # pass 1: W with C = 1, B (one value without vectorisation), C; pass 2: W with W*C constant
    assert [g for g, _ in t.groups][:3] == [w, b, c]
    assert all(cand["cmx"] == 1 and cand["cmy"] == 1 for cand in t.groups[0][1])
    second_w = t.groups[3][1]
    assert len({cand["wgx"] * cand["cmx"] for cand in second_w}) == 1
    assert len({cand["wgy"] * cand["cmy"] for cand in second_w}) == 1


def test_hybrid_adds_the_geometry_step_at_constant_work_group_size() -> None:
    t = run("hybrid", repeats=0)
    x, y, z = frozenset({"wgx", "cmx"}), frozenset({"wgy", "cmy"}), frozenset()
    assert [g for g, _ in t.groups][:3] == [x, y, z]
    assert t.groups[3][0] == frozenset({"wgx", "wgy"})
    assert len({c["wgx"] * c["wgy"] * c["wgz"] for c in t.groups[3][1]}) == 1


def test_a_group_the_device_refuses_entirely_keeps_the_current_values(caplog: Any) -> None:
    # every work-group wider than 2 in y is "refused": the y group has no working candidate but 1 and 2
    def refuses(c: dict[str, Any]) -> float:
        return math.inf if c["wgy"] > 1 else objective(c)

    t = Spy(heuristic="dims", loading="global", repeats=0, hints=hints())
    log = run_technique(t, space_2d(), refuses, budget=10**6, seed=0, batch=10**4)
    assert math.isfinite(log.best_value) and log.best_config["wgy"] == 1
    assert t.done


def test_unknown_loading_and_bad_repeats_are_refused() -> None:
    from ensemble.errors import TechniqueError

    with pytest.raises(TechniqueError, match="repeats"):
        Garvey(repeats=-1)
    t = Garvey(loading="texture", hints=hints())
    with pytest.raises(TechniqueError, match="loading='texture'"):
        run_technique(t, space_2d(), objective, budget=10, seed=0)


def test_rand_stops_after_its_samples_and_exps_keeps_the_expert_subset() -> None:
    log = run_technique(GarveyRand(samples=25), space_2d(64, 64), objective, budget=10**6, seed=1, batch=7)
    assert log.unique == 25
    assert len(EXPERT_RULES) == 4
    e = ExpS()
    log = run_technique(e, space_2d(64, 64), objective, budget=10**6, seed=1, batch=50)
    assert log.proposals and all(c["wgx"] >= 32 and c["vx"] <= 4 and c["wgy"] * c["cmy"] <= 4
                                 for c in log.proposals)
    expected = sum(1 for c in space_2d(64, 64).enumerate_valid()
                   if c["wgx"] >= 32 and c["vx"] <= 4 and c["wgy"] * c["cmy"] <= 4)
    assert log.unique == expected
