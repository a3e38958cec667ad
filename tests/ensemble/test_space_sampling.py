"""Valid sampling, repair to the nearest valid point, neighbours and mutation."""

from __future__ import annotations

import itertools
from collections import Counter

import numpy as np
import pytest

from ensemble import Boolean, Enum, Integer, PowerOfTwo, SearchSpace


def block_space():
    s = SearchSpace(
        PowerOfTwo("wx", 1, 1024), PowerOfTwo("wy", 1, 1024), Enum("mem", ["g", "l"])
    )
    s.require("wx * wy <= 1024")
    return s


def test_sampling_is_valid_and_uniform_over_valid_points():
    s = block_space()
    n_valid = s.count_valid()
    assert n_valid == 66 * 2  # pairs of exponents with i + j <= 10
    rng = np.random.default_rng(0)
    draws = s.sample(rng, 20000)
    assert all(s.is_valid(c) for c in draws)
    counts = Counter(s.config_hash(c) for c in draws)
    assert len(counts) == n_valid
    # uniform: every point near 20000/132 = 151 draws (chi-square-style bound, loose)
    assert min(counts.values()) > 90 and max(counts.values()) < 220


def test_same_seed_same_samples_different_seed_different():
    s = block_space()
    a = s.sample(np.random.default_rng(5), 30)
    b = s.sample(np.random.default_rng(5), 30)
    c = s.sample(np.random.default_rng(6), 30)
    assert a == b and a != c


def test_repair_returns_the_nearest_valid_point_in_index_space():
    s = SearchSpace(Integer("a", 0, 20), Integer("b", 0, 20)).require("a + b <= 10")
    rng = np.random.default_rng(0)
    fixed = s.repair({"a": 8, "b": 8}, rng)
    assert s.is_valid(fixed)
    # L1 distance in normalised index space: nearest points have a + b == 10, moved 6 steps
    assert (
        fixed["a"] + fixed["b"] == 10 and 2 <= fixed["a"] <= 8 and 2 <= fixed["b"] <= 8
    )
    assert s.repair({"a": 3, "b": 4}, rng) == {"a": 3, "b": 4}


def test_repair_brute_force_nearest_on_random_points():
    s = SearchSpace(Integer("a", 0, 9), Integer("b", 0, 9), Integer("c", 0, 4))
    s.require("a * b <= 12 and (a + c) % 3 != 1")
    valid = list(s.enumerate_valid())
    rng = np.random.default_rng(1)
    for _ in range(50):
        x = s.from_unit(rng.random(s.dims))
        fixed = s.repair(x, rng)

        def dist(c, x=x):
            return (
                abs(c["a"] - x["a"]) / 9
                + abs(c["b"] - x["b"]) / 9
                + abs(c["c"] - x["c"]) / 4
            )

        assert s.is_valid(fixed)
        assert dist(fixed) == pytest.approx(min(dist(v) for v in valid))


def test_repair_keeps_components_that_are_valid():
    s = SearchSpace(
        Integer("a", 0, 9), Integer("b", 0, 9), Integer("c", 0, 9), Integer("d", 0, 9)
    )
    s.require("a < b").require("c < d")
    rng = np.random.default_rng(0)
    fixed = s.repair({"a": 9, "b": 1, "c": 2, "d": 7}, rng)
    assert fixed["c"] == 2 and fixed["d"] == 7 and fixed["a"] < fixed["b"]


def test_repair_of_illegal_values_gives_legal_valid_config():
    s = block_space()
    rng = np.random.default_rng(0)
    fixed = s.repair({"wx": 3000, "wy": 3, "mem": "nope"}, rng)
    assert s.is_valid(fixed)
    assert (
        fixed["wx"] == 1024 and fixed["wy"] == 1
    )  # clipped to 1024, then wy pulled down


def test_neighbours_are_valid_single_steps():
    s = block_space()
    rng = np.random.default_rng(0)
    c = {"wx": 32, "wy": 32, "mem": "g"}
    nb = s.neighbours(c, rng)
    assert all(s.is_valid(x) for x in nb)
    assert {"wx": 16, "wy": 32, "mem": "g"} in nb and {
        "wx": 32,
        "wy": 16,
        "mem": "g",
    } in nb
    assert {"wx": 64, "wy": 32, "mem": "g"} not in nb  # violates the constraint
    assert {"wx": 32, "wy": 32, "mem": "l"} in nb
    assert len(nb) == 3


def test_mutate_changes_something_and_stays_valid():
    s = block_space()
    rng = np.random.default_rng(0)
    c = {"wx": 32, "wy": 32, "mem": "g"}
    for _ in range(100):
        m = s.mutate(c, rng, rate=0.3)
        assert s.is_valid(m) and m != c


def test_unconstrained_boolean_space_enumerates_in_full():
    s = SearchSpace(*(Boolean(f"f{i}") for i in range(10)))
    assert s.count_valid() == 1024
    got = {tuple(c.values()) for c in s.enumerate_valid()}
    assert got == set(itertools.product([False, True], repeat=10))


def test_same_seed_same_samples_and_repairs_in_a_fresh_process():
    import json
    import subprocess
    import sys
    from pathlib import Path

    code = (
        "import json, numpy as np\n"
        "from ensemble import SearchSpace, PowerOfTwo, Enum, Integer\n"
        "s = SearchSpace(PowerOfTwo('wx', 1, 1024), PowerOfTwo('wy', 1, 1024),"
        " Enum('mem', ['g', 'l']), Integer('u', 1, 30))\n"
        "s.require('wx * wy <= 1024').require('u == 1 or wx >= 4')\n"
        "rng = np.random.default_rng(11)\n"
        "out = s.sample(rng, 5) + [s.repair({'wx': 1024, 'wy': 512, 'mem': 'l', 'u': 9}, rng)]\n"
        "out.append(s.mutate(out[0], rng, 0.5))\n"
        "print(json.dumps(out))\n"
    )

    def run_here():
        s = SearchSpace(
            PowerOfTwo("wx", 1, 1024),
            PowerOfTwo("wy", 1, 1024),
            Enum("mem", ["g", "l"]),
        )
        s.add(Integer("u", 1, 30))
        s.require("wx * wy <= 1024").require("u == 1 or wx >= 4")
        rng = np.random.default_rng(11)
        out = s.sample(rng, 5) + [
            s.repair({"wx": 1024, "wy": 512, "mem": "l", "u": 9}, rng)
        ]
        out.append(s.mutate(out[0], rng, 0.5))
        return out

    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(root),
    )
    assert json.loads(proc.stdout) == run_here()


def test_table_index_nearest_matches_brute_force_on_a_large_table():
    from ensemble.space.nearest import TableIndex

    s = SearchSpace(*(Integer(f"x{i}", 0, 9) for i in range(5)), Boolean("f"))
    s.require("(x0 + 2 * x1 + 3 * x2) % 7 == x3 % 4 or (f and x4 > 6)")
    comp = next(c for c in s._comps() if len(c.names) > 1)
    t = comp.table()
    assert t.shape[0] > 4096  # large enough for the sampled bound to be used
    index = TableIndex(t, comp._cards())
    spans = np.maximum(np.array(comp._cards()) - 1, 1)
    rng = np.random.default_rng(3)
    for _ in range(40):
        here = np.array([rng.integers(c) for c in comp._cards()])
        dist = (np.abs(t.astype(np.int64) - here) / spans).sum(axis=1)
        row = index.nearest(here, rng)
        assert dist[row] == pytest.approx(dist.min())
