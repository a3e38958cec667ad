"""BayesOpt under many workers: refits spread over results (issue 18 point 3, docs/bo_refit_s20/).

Why: at 32 workers on 0.2 s evaluations a result arrives every 6.25 ms, and
a refit done in one piece (0.1-0.9 s at a thousand observations) held every
worker up and retired the model by its own rule.  With several workers a due
refit now runs as a job, one bounded step per result, while the posterior
goes on taking every result.  These tests check the numerics the job relies
on (column and block updates, the stepwise build), that refits happen only
at the scheduled counts while the posterior is updated every result, that a
seed reproduces a run, and that a 32-worker stand-in keeps the model.
The option (``spread_refits``) is off by default: at 8 simulated workers
it lowered the replay score (docs/bo_refit_s20/).
"""

from __future__ import annotations

import itertools
from collections import deque
from typing import Any

import numpy as np

from ensemble.space import Integer, SearchSpace
from ensemble.technique import Trial
from techniques.bayes_opt import BayesOpt
from techniques.gaussian_process import (
    GPHyper,
    PoolPosterior,
    fit_hyperparameters,
    fit_hyperparameters_steps,
)


def _posterior_case(m: int = 40, n: int = 120, seed: int = 0) -> tuple[GPHyper, np.ndarray, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    X = rng.random((m, 2))
    y = np.sin(4 * X[:, 0]) + X[:, 1] ** 2 + 0.01 * rng.normal(size=m)
    return GPHyper(np.array([0.3, 0.5]), 1.2, 1e-3), X, (y - y.mean()) / y.std(), rng.random((n, 2))


def test_column_and_block_updates_equal_the_direct_solve() -> None:
    hyper, X, y, pool = _posterior_case()
    ref = PoolPosterior.from_data(hyper, X, y, pool)
    by_col = PoolPosterior.from_data(hyper, X[:30], y[:30], np.vstack([pool, X[30:]]))
    for k in range(30, 40):  # the new points are pool columns 120.. : their L^-1 k(X, x) is read from V
        by_col.add(X[k], y[k], col=120 + k - 30)
    block = PoolPosterior.from_data(hyper, X[:25], y[:25], pool)
    block.add_block(X[25:], y[25:], np.full(15, -1))
    for post, cols in ((by_col, slice(0, 120)), (block, slice(None))):
        mu, var = post.predict()
        mu_ref, var_ref = ref.predict()
        np.testing.assert_allclose(mu[cols], mu_ref, atol=1e-9)
        np.testing.assert_allclose(var[cols], var_ref, atol=1e-9)
    np.testing.assert_allclose(block.means_at(pool[:5], np.arange(5)), ref.predict()[0][:5], atol=1e-9)
    grown = PoolPosterior.from_data(hyper, X, y, pool[:60])
    grown.extend_pool(pool[60:])
    np.testing.assert_allclose(grown.predict()[1], ref.predict()[1], atol=1e-9)


def test_the_stepwise_build_equals_from_data_and_its_steps_are_bounded() -> None:
    hyper, X, y, pool = _posterior_case(m=60, n=500)
    steps = list(PoolPosterior.build_steps(hyper, X, y, pool, step_flops=60 * 60 * 100))
    post = steps[-1]
    assert all(s is None for s in steps[:-1]) and isinstance(post, PoolPosterior)
    assert len(steps) == 1 + 5  # the Cholesky, then the 500 columns by blocks of 100
    ref = PoolPosterior.from_data(hyper, X, y, pool)
    np.testing.assert_allclose(post.predict()[0], ref.predict()[0], atol=1e-10)
    np.testing.assert_allclose(post.predict()[1], ref.predict()[1], atol=1e-10)


def test_the_hyperparameter_fit_by_starts_equals_the_fit_in_one_piece() -> None:
    _, X, y, _ = _posterior_case(m=50)
    one = fit_hyperparameters(X, y, np.random.default_rng(5), restarts=1)
    steps = list(fit_hyperparameters_steps(X, y, np.random.default_rng(5), restarts=1, chunk=50))
    assert steps[:-1] == [None, None]  # one step per start
    np.testing.assert_allclose(steps[-1].to_theta(), one.to_theta())


def _bench_space() -> SearchSpace:
    return SearchSpace(Integer("a", 0, 999), Integer("b", 0, 999))  # sampled pool, as bench_mpi's


def _value(c: dict[str, Any]) -> float:
    return 1.0 + ((c["a"] - 300) / 1000) ** 2 + ((c["b"] - 700) / 1000) ** 2


def _stand_in(bo: BayesOpt, workers: int, results: int, space: SearchSpace, on_result: Any = None) -> list[str]:
    """A batch of ``workers``, then one proposal per result, results in the order proposed (cost 0.2 s)."""
    bo.bind(space, budget=results)  # the random stream of the technique's seed
    bo.workers = workers
    flight = deque(bo.propose(workers))
    order = [space.config_hash(c) for c in flight]
    for n in range(results):
        if not flight:
            break
        c = flight.popleft()
        bo.observe(Trial(config=c, config_hash=space.config_hash(c), value=_value(c), state="OK",
                         technique="BayesOpt", evaluation=n + 1, cost=0.2))
        if on_result is not None:
            on_result(bo)
        new = bo.propose(1) if len(order) < results else []
        order += [space.config_hash(c) for c in new]
        flight.extend(new)
    return order


def test_refits_only_at_the_scheduled_counts_and_the_posterior_takes_every_result() -> None:
    """Several workers: a refit starts when the data grew by refit_growth and by 2 x workers results since
    the last; between refits the posterior holds every result with the fitted hyperparameters."""
    space, workers = _bench_space(), 8
    bo = BayesOpt(seed=3, pool=300, spread_refits=True)
    one_piece: list[int] = []
    refit = bo._refit

    def counted() -> None:
        one_piece.append(len(bo._obs))
        refit()

    bo._refit = counted  # type: ignore[method-assign]
    fits_at, seen_fits, checked = [], [0], [0]

    def check(b: BayesOpt) -> None:
        if b.fits != seen_fits[0]:
            seen_fits[0] = b.fits
            fits_at.append(b._n_at_fit)
        if b._gp is None or b._job is not None or len(b._obs) % 7:
            return
        # the posterior equals a direct solve on its rows with the same hyperparameters
        gp = b._gp
        ref = PoolPosterior.from_data(gp.hyper, gp._X[: gp.m], gp._t[: gp.m], gp._pool)
        np.testing.assert_allclose(gp.predict()[0], ref.predict()[0], atol=1e-7)
        np.testing.assert_allclose(gp.variance(), ref.predict()[1], atol=1e-7)
        measured = [h for h, (_, v) in b._obs.items() if np.isfinite(v)]
        assert all(h in b._rows for h in measured)  # every result is in the posterior
        checked[0] += 1

    _stand_in(bo, workers, 160, space, on_result=check)
    assert one_piece == [bo._n_init]  # only the first fit runs in one piece; the others are spread
    assert bo.fits >= 4 and checked[0] >= 5
    assert fits_at[0] == bo._n_init and len(fits_at) == bo.fits
    for a, b in itertools.pairwise(fits_at):  # the data each fit saw
        assert b - a >= 2 * workers and b >= 1.25 * a


def test_a_seed_reproduces_a_many_worker_run() -> None:
    space = _bench_space()
    first = _stand_in(BayesOpt(seed=11, pool=300, spread_refits=True), 8, 120, space)
    again = _stand_in(BayesOpt(seed=11, pool=300, spread_refits=True), 8, 120, space)
    other = _stand_in(BayesOpt(seed=12, pool=300, spread_refits=True), 8, 120, space)
    assert first == again and first != other and len(first) == 120


def test_a_32_worker_stand_in_keeps_the_model() -> None:
    """32 workers on 0.2 s evaluations (6.25 ms between results), every timed section costing 1 ms and
    every refit step 2 ms more: the model is kept, and after the first fit it refits only by spread jobs;
    with ``spread_refits=False`` every refit is one piece, as before."""
    space = _bench_space()
    bo = BayesOpt(seed=2, pool=300, compute_share=0.25, spread_refits=True)

    class Clock:
        now = 0.0

        def __call__(self) -> float:
            self.now += 0.001
            return self.now

    clock = bo.clock = Clock()
    advance, refit, one_piece = bo._advance, bo._refit, [0]

    def costly() -> None:
        if bo._job is not None:
            clock.now += 0.002
        advance()

    def counted() -> None:
        one_piece[0] += 1
        refit()

    bo._advance, bo._refit = costly, counted  # type: ignore[method-assign]
    order = _stand_in(bo, 32, 400, space)
    assert bo.retired is None and len(order) == 400 and len(set(order)) == 400
    assert one_piece[0] == 1 and bo.fits >= 4
    off = BayesOpt(seed=2, pool=300)  # the default: off
    refit_off, pieces = off._refit, [0]

    def counted_off() -> None:
        pieces[0] += 1
        refit_off()

    off._refit = counted_off  # type: ignore[method-assign]
    _stand_in(off, 32, 200, space)
    assert off._job is None and pieces[0] == off.fits >= 4


def test_the_throughput_test_averages_over_four_rounds_only_when_refits_are_spread() -> None:
    spread, plain = BayesOpt(spread_refits=True), BayesOpt()
    for bo in (spread, plain):
        bo.workers = 32
    assert spread._window() == 128 and plain._window() == 32
    spread.workers = 4
    assert spread._window() == 32
    mixed = BayesOpt(spread_refits=True, failures_in_gp="always")  # refits stay in one piece there (_spread)
    mixed.workers = 32
    assert mixed._window() == 32


def test_spread_refits_takes_a_bool_or_auto_only() -> None:
    """A string such as 'false' must not switch the option on by being truthy."""
    import pytest

    from ensemble.errors import TechniqueError

    for bad in ("false", "off", 1, None):
        with pytest.raises(TechniqueError, match="spread_refits must be True, False or .auto."):
            BayesOpt(spread_refits=bad)
