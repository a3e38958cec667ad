"""csTuner Section IV-D: Algorithm 2 (metric combination) and the Eq. 3 PMNF models."""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("scipy")

from techniques.cstuner.metrics import algorithm2, combine_metrics, metric_deque, pcc
from techniques.cstuner.pmnf import fit_pmnf, guided_sample, holdout_rank_test


def test_pmnf_recovers_known_exponents_with_noise() -> None:
    rng = np.random.default_rng(0)
    x = 2.0 ** rng.integers(0, 6, size=(200, 3))           # powers of two, as the paper's parameters
    groups = [[0, 1], [2]]
    # Eq. 3 with i = 2, j = 1: c_1 * prod (P^2 log2 P) over group 1 + c_2 * (P^2 log2 P) of group 2
    t1 = np.prod(x[:, [0, 1]] ** 2 * np.log2(x[:, [0, 1]]), axis=1)
    t2 = x[:, 2] ** 2 * np.log2(x[:, 2])
    y = 3.0 + 0.002 * t1 + 0.5 * t2
    y = y * (1 + 0.02 * rng.standard_normal(len(y)))       # 2 % noise
    model = fit_pmnf(x, y, groups)
    assert model is not None and (model.i, model.j) == (2, 1)
    pred = model.predict(x)
    assert np.corrcoef(pred, y)[0, 1] > 0.99


@pytest.mark.parametrize("i,j", [(1, 0), (0, 1), (2, 0)])
def test_pmnf_picks_each_generating_function(i: int, j: int) -> None:
    rng = np.random.default_rng(1)
    x = 2.0 ** rng.integers(1, 7, size=(150, 2))
    y = 1.0 + 4.0 * (x[:, 0] ** i * np.log2(x[:, 0]) ** j) + 2.0 * (x[:, 1] ** i * np.log2(x[:, 1]) ** j)
    model = fit_pmnf(x, y * (1 + 0.01 * rng.standard_normal(len(y))), [[0], [1]])
    assert model is not None and (model.i, model.j) == (i, j)


def test_holdout_rank_test_accepts_a_known_pmnf_model() -> None:
    # data from Eq. 3 (i = 1, j = 1) with 5 % noise: held-out predictions rank the samples well
    rng = np.random.default_rng(10)
    x = 2.0 ** rng.integers(0, 6, size=(60, 3))
    y = 2.0 + 0.3 * np.prod(x[:, [0, 1]] * np.log2(x[:, [0, 1]]), axis=1) + 1.5 * x[:, 2] * np.log2(x[:, 2])
    y = y * (1 + 0.05 * rng.standard_normal(len(y)))
    rho, p = holdout_rank_test(x, y, [[0, 1], [2]], np.random.default_rng(0))
    assert rho > 0.8 and p < 1e-6


def test_holdout_rank_test_rejects_pure_noise() -> None:
    # y independent of x: over several data sets the one-sided p is well above 0.05 on the whole,
    # and a single draw is not "better than chance" at 0.05 in most of them
    ps = []
    for seed in range(10):
        rng = np.random.default_rng(100 + seed)
        x = 2.0 ** rng.integers(0, 6, size=(60, 3))
        y = 1.0 + rng.random(60)
        rho, p = holdout_rank_test(x, y, [[0, 1], [2]], np.random.default_rng(seed))
        assert 0.0 <= p <= 1.0
        ps.append(p)
    assert np.median(ps) > 0.2
    assert sum(p < 0.05 for p in ps) <= 2


def test_holdout_rank_test_without_enough_data_is_not_significant() -> None:
    rho, p = holdout_rank_test(np.ones((1, 2)), [1.0], [[0], [1]], np.random.default_rng(0))
    assert math.isnan(rho) and p == 1.0
    rho, p = holdout_rank_test(2.0 ** np.arange(12).reshape(6, 2), [1.0] * 6, [[0], [1]], np.random.default_rng(0))
    assert p == 1.0                                     # a flat objective ranks nothing


def test_pmnf_needs_more_samples_than_coefficients() -> None:
    assert fit_pmnf(np.ones((3, 3)), [1.0, 2.0, 3.0], [[0], [1], [2]]) is None


def test_algorithm2_keeps_one_metric_per_correlated_collection() -> None:
    rng = np.random.default_rng(2)
    time = rng.random(100)
    other = rng.random(100)
    table = {
        "dram_bytes": time * 10 + 0.01 * rng.random(100),   # collection 1 ...
        "l2_bytes": time * 9 + 0.3 * rng.random(100),        # ... its weaker member
        "sm_util": other,                                    # collection 2 ...
        "warps": other * 2 + 0.05 * rng.random(100),         # ... its other member
    }
    dq = metric_deque(table)
    cols = algorithm2(dq, num_collections=2)
    assert sorted(sorted(c) for c in cols) == [["dram_bytes", "l2_bytes"], ["sm_util", "warps"]]
    chosen = combine_metrics(table, time, num_collections=2)
    assert len(chosen) == 2 and "dram_bytes" in chosen                 # highest |PCC| with time
    assert len({"sm_util", "warps"} & set(chosen)) == 1


def test_algorithm2_respects_the_number_of_collections() -> None:
    dq = metric_deque({"a": [1, 2, 3, 4], "b": [1, 2, 3, 5], "c": [4, 1, 3, 2], "d": [4, 1, 3, 3]})
    assert len(algorithm2(dq, 1)) == 1


def test_pcc() -> None:
    assert pcc([1, 2, 3], [2, 4, 6]) == pytest.approx(1.0)
    assert pcc([1, 2, 3], [3, 2, 1]) == pytest.approx(-1.0)
    assert pcc([1, 1, 1], [1, 2, 3]) == 0.0


def test_guided_sample_keeps_the_ratio_passing_every_threshold() -> None:
    pred = {"t": np.arange(100.0), "u": -np.arange(100.0)}   # both prefer low index (u: higher is better)
    idx = guided_sample(pred, {"t": True, "u": False}, 0.1)
    assert len(idx) == 10 and set(idx) == set(range(10))
    with pytest.raises(ValueError, match="sampling ratio"):
        guided_sample(pred, {"t": True, "u": False}, 0.0)
