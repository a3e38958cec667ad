"""Cummins et al.'s work-group predictors: size algebra, fallbacks, Algorithm 2, bad input, the seed technique."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from ensemble.registry import create_technique
from ensemble.space import Enum, SearchSpace
from techniques.workgroup import (
    WorkgroupPredictor,
    baseline,
    legal,
    oracle,
    performance,
    w_safe,
)
from techniques.workgroup.fallbacks import FALLBACKS, NoLegalSizeError

ROOT = Path(__file__).resolve().parents[2]


def toy() -> tuple[np.ndarray, list[dict], list[set], list[int]]:
    """Three scenarios; (2, 2) is the only size legal everywhere; (8, 8) is refused in the third."""
    times = [{(2, 2): 4.0, (4, 4): 2.0, (8, 8): 1.0},
             {(2, 2): 3.0, (4, 4): 1.0, (8, 8): 2.0, (16, 16): 9.0},
             {(2, 2): 1.0, (4, 4): 2.0}]
    refused = [set(), set(), {(8, 8)}]
    X = np.array([[1.0, 0.0], [2.0, 1.0], [3.0, 0.0]])
    return X, times, refused, [256, 256, 64]


def test_size_algebra_follows_the_equations() -> None:
    _, times, _, _ = toy()
    assert oracle(times[0]) == (8, 8)                       # Eq. 3
    assert performance(times[0], (4, 4)) == pytest.approx(0.5)
    assert w_safe(times) == {(2, 2), (4, 4)}                  # Eq. 2
    # geometric mean of p over W_safe: (2,2): (1/4 * 1/3 * 1)^(1/3); (4,4): (1/2 * 1 * 1/2)^(1/3)
    assert baseline(times) == (4, 4)
    assert legal((4, 4), 16, set()) and not legal((8, 8), 63, set()) and not legal((8, 8), 64, {(8, 8)})


@pytest.mark.parametrize("name", sorted(FALLBACKS))
def test_each_fallback_turns_a_refused_prediction_into_a_legal_size(name: str) -> None:
    pool = [(2, 2), (4, 4), (4, 8), (8, 8), (16, 16)]
    refused_here = {(8, 8), (4, 8)}
    seen: set = set()
    w, tries = FALLBACKS[name]((8, 8), is_legal=lambda w: w not in refused_here, w_max=64, pool=pool,
                               base=(4, 4), rng=np.random.default_rng(0), refused=seen)
    assert w not in refused_here and w[0] * w[1] <= 64 and tries >= 1
    assert (8, 8) in seen
    if name == "baseline":
        assert w == (4, 4)
    if name == "nearest":  # from (8, 8): (4, 8) is nearest but refused, then from (4, 8) the nearest is (4, 4)
        assert w == (4, 4) and tries == 2


def test_fallback_with_nothing_legal_raises_its_own_error() -> None:
    with pytest.raises(NoLegalSizeError):
        FALLBACKS["nearest"]((8, 8), is_legal=lambda w: False, w_max=64, pool=[(2, 2)], base=(2, 2),
                             rng=np.random.default_rng(0), refused=set())


@pytest.mark.parametrize("method", ["runtime", "speedup"])
def test_algorithm2_skips_refused_candidates(method: str) -> None:
    X, times, refused, w_max = toy()
    p = WorkgroupPredictor(method, seed=1).fit(X, times, refused, w_max)
    free = p.predict([2.0, 1.0], 256)
    assert free.refused == () and free.tries == 0
    blocked = p.predict([2.0, 1.0], 256, is_legal=lambda w: w != free.size)
    assert blocked.size != free.size and free.size in blocked.refused and blocked.tries >= 1


def test_bad_input_gives_w_safe_and_a_message() -> None:
    X, times, refused, w_max = toy()
    p = WorkgroupPredictor("classifier", model="J48").fit(X, times, refused, w_max)
    for x in ([math.nan, 1.0], [1.0, 2.0, 3.0], ["a", "b"]):
        pred = p.predict(x, 256)
        assert pred.used_w_safe and pred.size == (4, 4) and "W_safe" in pred.note
    small = p.predict([1.0, 0.0], 8)   # a device below every training device's maximum (64)
    assert small.used_w_safe and "below every training" in small.note
    assert small.size[0] * small.size[1] <= 8


def test_fresh_process_trains_and_predicts_every_model_on_the_shipped_extract() -> None:
    code = """
import json
from apps.workgroup.data import load
from techniques.workgroup import WorkgroupPredictor
from techniques.workgroup.models import CLASSIFIERS
d = load()
out = {}
for method, model in [("classifier", m) for m in CLASSIFIERS] + [("runtime", "-"), ("speedup", "-")]:
    p = WorkgroupPredictor(method, model=model if model != "-" else "J48", seed=3)
    p.fit(d.features, d.times, d.refused, d.column("w_max"))
    sizes = []
    for i in range(len(d)):
        t = d.times[i]
        pred = p.predict(d.features[i], d.scenarios[i]["w_max"], lambda w, t=t: w in t, pool=sorted(t))
        sizes.append(list(pred.size) if pred.size in t else None)
    out[method + ":" + model] = sizes
print(json.dumps(out))
"""
    # the two fresh processes run side by side (each is one busy thread; the CI box has two cores)
    procs = [subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True)
             for _ in range(2)]
    try:
        outs = [p.communicate(timeout=600) for p in procs]
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.communicate()
    for p, (_, err) in zip(procs, outs):
        assert p.returncode == 0, err[-2000:]
    a, b = (json.loads(out) for out, _ in outs)
    assert len(a) == 7
    for name, sizes in a.items():
        assert sizes and all(s is not None for s in sizes), name   # every prediction is a measured legal size
    assert a == b   # same seed, same predictions, in a fresh process


def _space() -> SearchSpace:
    s = SearchSpace()
    s.add(Enum("wgx", [1, 2, 4, 8, 16, 32]), Enum("wgy", [1, 2, 4, 8, 16, 32]), Enum("mem", ["global", "local"]))
    s.require("wgx * wgy <= 64")
    return s


def test_workgroup_seed_proposes_the_prediction_first_then_hands_over() -> None:
    t = create_technique("WorkgroupSeed", seed=0, first=[{"wgx": 16, "wgy": 4}, {"wgx": 32, "wgy": 32}],
                         then="Random")
    space = _space()
    t.bind(space, budget=20, rng=np.random.default_rng(0))
    got = t.propose(3)
    assert (got[0]["wgx"], got[0]["wgy"]) == (16, 4)
    assert space.is_valid(got[1]) and all(space.is_valid(c) for c in got)   # 32x32 repaired into the space
    assert t.credit_name(space.config_hash(got[0])) == "WorkgroupSeed"
    assert t.credit_name(space.config_hash(got[2])) == "Random"


@pytest.mark.parametrize("fallback", sorted(FALLBACKS))
def test_without_the_guard_an_over_w_max_prediction_is_repaired_by_the_fallback(fallback: str) -> None:
    times = [{(2, 2): 4.0, (4, 4): 2.0, (8, 8): 1.0}, {(2, 2): 3.0, (4, 2): 2.0, (8, 8): 1.0}]
    p = WorkgroupPredictor("classifier", model="J48", fallback=fallback, guard_small_device=False)
    p.fit(np.array([[1.0, 0.0], [2.0, 1.0]]), times, [set(), set()], [64, 64])
    pred = p.predict([1.0, 0.0], 16)   # every oracle is (8, 8) = 64 work-items > 16
    assert not pred.used_w_safe and pred.first == (8, 8)
    assert pred.size[0] * pred.size[1] <= 16 and pred.tries >= 1
