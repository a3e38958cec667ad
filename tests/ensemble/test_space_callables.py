"""Names read by callable constraints, inferred from source only when provable."""

from __future__ import annotations

import numpy as np

from ensemble import Boolean, Enum, Float, Integer, SearchSpace
from ensemble.space.callables import infer_names

KNOWN = ["a", "b", "c", "d"]


def helper(cfg):
    return cfg["a"] > 0


def reads_two(cfg):
    x = cfg["a"] * 2
    return x < cfg.get("b", 0)


def passes_config_on(cfg):
    return helper(cfg) and cfg["b"] > 1


def iterates(cfg):
    return sum(cfg.values()) < 10


def test_lambdas_and_functions_with_constant_keys():
    assert infer_names(lambda c: c["b"] < c["a"], KNOWN) == ("a", "b")
    assert infer_names(reads_two, KNOWN) == ("a", "b")
    limit = 3
    assert infer_names(lambda c: c["d"] <= limit, KNOWN) == ("d",)


def test_anything_unprovable_gives_none():
    assert infer_names(passes_config_on, KNOWN) is None
    assert infer_names(iterates, KNOWN) is None
    key = "a"
    assert infer_names(lambda c: c[key] > 0, KNOWN) is None  # non-constant key
    assert infer_names(lambda c: c["zz"] > 0, KNOWN) is None  # unknown name
    assert infer_names(lambda c, d=1: c["a"] > d, KNOWN) is None  # two arguments
    assert infer_names(len, KNOWN) is None  # no Python source
    assert infer_names(lambda c: (lambda c: c["a"])(c) > 0, KNOWN) is None  # noqa: PLC3002


def test_two_lambdas_on_one_line_must_agree():
    f, g = (lambda c: c["a"] > 0), (lambda c: c["b"] > 0)
    assert infer_names(f, KNOWN) is None and infer_names(g, KNOWN) is None


def test_inferred_names_split_the_space_and_keep_it_exact():
    s = SearchSpace(
        Integer("a", 0, 9),
        Integer("b", 0, 9),
        Float("x", 0.0, 1.0),
        Enum("m", ["p", "q"]),
    )
    s.add(Boolean("v"))
    s.require(lambda c: c["a"] < c["b"])
    s.require(lambda c: not (c["m"] == "q" and c["v"]))
    assert sorted(map(sorted, s.components())) == [["a", "b"], ["m", "v"], ["x"]]
    assert s.count_valid() is None  # a Float is free: infinite
    t = SearchSpace(
        Integer("a", 0, 9), Integer("b", 0, 9), Enum("m", ["p", "q"]), Boolean("v")
    )
    t.require(lambda c: c["a"] < c["b"]).require(
        lambda c: not (c["m"] == "q" and c["v"])
    )
    assert t.count_valid() == 45 * 3
    rng = np.random.default_rng(0)
    assert all(s.is_valid(c) for c in s.sample(rng, 100))
