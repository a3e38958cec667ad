"""Real spaces: Kernel Tuner definitions (counts known) and SPAPT (up to 1e36 points)."""

from __future__ import annotations

import gzip
import itertools
import json
import math
from pathlib import Path

import numpy as np
import pytest

from ensemble import Enum, SearchSpace

DATA = Path(__file__).resolve().parents[3] / "shared" / "data"
if not DATA.is_dir():  # the checkout lives next to shared/ on the development machine
    DATA = Path("/work/shared/data")
DEFS = DATA / "spaces" / "definitions"
SPAPT = DATA / "param_spaces" / "spapt_search_spaces.json"

pytestmark = pytest.mark.skipif(
    not DATA.is_dir(), reason="shared data directory not present"
)

# valid configurations recorded in the matching Kernel Tuner caches (see data README)
KNOWN_COUNTS = {"convolution": 4362, "dedispersion": 11130}


def _values(text):
    # definitions write value lists as small Python expressions ("[2**i for i in range(6)]");
    # they are our own test data, evaluated with nothing but range/list available
    return list(eval(text, {"__builtins__": {}, "range": range, "list": list}))


def kt_space(name):
    d = json.loads((DEFS / f"{name}_milo.json").read_text())
    s = SearchSpace()
    for p in d["ConfigurationSpace"]["TuningParameters"]:
        s.add(Enum(p["Name"], _values(p["Values"])))
    for c in d["ConfigurationSpace"]["Conditions"]:
        s.require(c["Expression"])
    return s


def spapt_space(kernel):
    d = json.loads(SPAPT.read_text())[kernel]
    s = SearchSpace()
    for n, vals in d["params"].items():
        s.add(Enum(n, vals))
    for label, c in d["constraints"].items():
        s.require(c, name=label)
    return s, d


def brute_count(s):
    return sum(
        1
        for combo in itertools.product(*(p.values() for p in s.params))
        if all(c.holds(dict(zip(s.names, combo))) for c in s.constraints)
    )


@pytest.mark.parametrize("name", sorted(KNOWN_COUNTS))
def test_kernel_tuner_counts_match_recorded_caches(name):
    s = kt_space(name)
    assert s.count_valid() == KNOWN_COUNTS[name]
    with gzip.open(DATA / "spaces" / f"{name}_A100.json.gz") as fh:
        cache = json.loads(fh.read())
    keys = cache["tune_params_keys"]
    recorded = {tuple(rec[k] for k in keys) for rec in cache["cache"].values()}
    enumerated = {tuple(c[k] for k in keys) for c in s.enumerate_valid()}
    assert enumerated == recorded


def test_convolution_count_matches_brute_force():
    s = kt_space("convolution")
    assert s.count_valid() == brute_count(s)


@pytest.mark.slow
def test_gemm_count_matches_brute_force():
    s = kt_space("gemm")
    assert s.count_valid() == brute_count(s) == 116928


@pytest.mark.slow
def test_hotspot_pruned_join_matches_full_grid_vector_count():
    # 4.4e6 grid points: compare the pruned join with plain vectorised evaluation of the grid
    s = kt_space("hotspot")
    cols = np.meshgrid(*(np.array(p.values()) for p in s.params), indexing="ij")
    cols = {n: c.ravel() for n, c in zip(s.names, cols)}
    n = cols[s.names[0]].size
    ok = np.ones(n, dtype=bool)
    for c in s.constraints:
        ok &= c.expression.vector(cols, n)
    assert s.count_valid() == int(ok.sum())


KERNELS = sorted(json.loads(SPAPT.read_text())) if SPAPT.exists() else []


@pytest.mark.parametrize("kernel", KERNELS)
def test_spapt_sampling_is_valid_and_counts_are_exact(kernel):
    s, d = spapt_space(kernel)
    assert math.isclose(math.log10(s.size), d["log10_size"], abs_tol=0.01)
    rng = np.random.default_rng(0)
    for c in s.sample(rng, 100):
        assert s.is_valid(c)
    fixed = s.repair(s.from_unit(rng.random(s.dims)), rng)
    assert s.is_valid(fixed)
    count = s.count_valid()
    assert count is not None and 0 < count < s.size


@pytest.mark.slow
@pytest.mark.parametrize("kernel", KERNELS)
def test_spapt_counts_agree_with_monte_carlo_and_repairs_are_valid(kernel):
    s, _ = spapt_space(kernel)
    rng = np.random.default_rng(1)
    for _ in range(20):
        assert s.is_valid(s.repair(s.from_unit(rng.random(s.dims)), rng))
    count = s.count_valid()
    hits, trials = 0, 4000
    for _ in range(trials):
        hits += s.is_valid({p.name: p.sample(rng) for p in s.params})
    frac = count / s.size
    assert (
        abs(hits / trials - frac)
        < 5 * math.sqrt(frac * (1 - frac) / trials) + 2 / trials
    )


def test_spapt_component_counts_match_brute_force():
    s, _ = spapt_space("atax")
    for names in s.components():
        if len(names) < 2:
            continue
        sub = SearchSpace(*(s[n] for n in names))
        for c in s.constraints:
            if c.expression is not None and set(c.names) <= set(names):
                sub.require(c.expression.source)
        assert sub.count_valid() == brute_count(sub)
