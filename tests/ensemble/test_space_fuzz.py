"""Randomised cross-checks: exact count, enumeration, sampling and repair vs brute force.

Spaces and constraints are generated from a fixed seed, so failures reproduce;
each case is small enough to enumerate by itertools.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from ensemble import Boolean, Enum, Integer, PowerOfTwo, SearchSpace

TEMPLATES = [
    "{a} * {b} <= {k}",
    "{a} + {b} > {k} or {c} == {v}",
    "{a} % ({b} + 1) != {k} % 3",
    "not ({a} > {k} and {b} < {k})",
    "min({a}, {b}) <= {k} <= max({a}, {c}) + 2",
    "({a} if {a} > 0 else -{a}) + {b} // 2 < {k}",
    "{a} in ({k}, {v}, 4) or {b} not in (1, 2)",
    "abs({a} - {b}) >= {k} % 4",
]


def random_case(seed: int) -> tuple[SearchSpace, list[str]]:
    rng = np.random.default_rng(seed)
    params = []
    for i in range(int(rng.integers(3, 6))):
        kind = int(rng.integers(4))
        if kind == 0:
            lo = int(rng.integers(-4, 3))
            params.append(Integer(f"p{i}", lo, lo + int(rng.integers(1, 8))))
        elif kind == 1:
            params.append(PowerOfTwo(f"p{i}", 1, 2 ** int(rng.integers(1, 5))))
        elif kind == 2:
            params.append(Boolean(f"p{i}"))
        else:
            params.append(Enum(f"p{i}", [1, 3, 5, 7][: int(rng.integers(2, 5))]))
    mode = Enum("mode", ["x", "y", "z"])
    params.append(mode)
    s = SearchSpace(*params)
    numeric = [p.name for p in params if p is not mode]
    rules = []
    for _ in range(int(rng.integers(1, 4))):
        a, b, c = (numeric[int(i)] for i in rng.integers(len(numeric), size=3))
        tpl = TEMPLATES[int(rng.integers(len(TEMPLATES)))]
        rule = tpl.format(
            a=a, b=b, c=c, k=int(rng.integers(-2, 9)), v=int(rng.integers(0, 4))
        )
        if rng.random() < 0.4:
            rule = f"mode == '{'xyz'[int(rng.integers(3))]}' or ({rule})"
        rules.append(rule)
    for r in rules:
        s.require(r)
    if rng.random() < 0.3:  # a recorded subset over two or three parameters
        k = int(rng.integers(2, 4))
        chosen = [
            params[int(i)] for i in rng.choice(len(params), size=k, replace=False)
        ]
        grid = list(itertools.product(*(p.values() for p in chosen)))
        keep = rng.random(len(grid)) < 0.5
        rows = [
            dict(zip((p.name for p in chosen), g)) for g, kk in zip(grid, keep) if kk
        ]
        if rows:
            s.restrict_to(rows)
    if (
        rng.random() < 0.5
    ):  # a closure with computed keys: assumed to read every parameter
        lim = int(rng.integers(0, 6))
        x, y = numeric[0], numeric[-1]
        s.require(lambda cfg: cfg[x] - cfg[y] <= lim)
    return s, rules


def brute(s: SearchSpace) -> list[dict]:
    out = []
    for combo in itertools.product(*(p.values() for p in s.params)):
        c = dict(zip(s.names, combo))
        if all(k.holds(c) for k in s.constraints):
            out.append(c)
    return out


@pytest.mark.parametrize("seed", range(40))
def test_random_spaces_agree_with_brute_force(seed):
    s, _ = random_case(seed)
    valid = brute(s)
    assert s.count_valid() == len(valid)
    got = list(s.enumerate_valid())
    assert sorted(map(s.config_hash, got)) == sorted(map(s.config_hash, valid))
    rng = np.random.default_rng(seed)
    if not valid:
        with pytest.raises(Exception, match="no valid configuration"):
            s.sample(rng)
        return
    assert all(s.is_valid(c) for c in s.sample(rng, 30))
    spans = {p.name: max(p.cardinality - 1, 1) for p in s.params}

    def dist(a, b):
        return sum(
            abs(s[n].index_of(a[n]) - s[n].index_of(b[n])) / spans[n] for n in s.names
        )

    for _ in range(5):
        x = s.from_unit(rng.random(s.dims))
        fixed = s.repair(x, rng)
        assert s.is_valid(fixed)
        if s.is_valid(x):
            assert fixed == x
        else:  # distances add over independent components: per-component nearest is global
            assert dist(x, fixed) == pytest.approx(min(dist(x, v) for v in valid))


@pytest.mark.parametrize("seed", range(40, 60))
def test_fallback_paths_stay_valid_when_tables_are_refused(seed, monkeypatch):
    from ensemble.space import components

    monkeypatch.setattr(components, "TABLE_LIMIT", 4)
    monkeypatch.setattr(components, "SCALAR_TABLE_LIMIT", 4)
    s, _ = random_case(seed)
    if s.count_valid(limit=10**6) == 0:
        return
    rng = np.random.default_rng(seed)
    assert all(s.is_valid(c) for c in s.sample(rng, 20))
    for _ in range(5):
        assert s.is_valid(s.repair(s.from_unit(rng.random(s.dims)), rng))
        assert s.is_valid(s.mutate(s.sample(rng)[0], rng, 0.5))
