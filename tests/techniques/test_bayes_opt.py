"""Tests of the GP Bayesian optimization (techniques/bayes_opt.py, techniques/gaussian_process.py).

Why: the conformance suite checks the contract; these check the numerics
(the analytic gradient of the marginal likelihood against finite
differences, the O(m N) incremental posterior against the textbook
formula), that the model pays (beats random search at equal budget), that
a batch gets distinct fresh points (kriging believer) and that failures
are left out of the model but never proposed again.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from ensemble.errors import TechniqueError
from ensemble.registry import create_technique
from ensemble.technique import Trial
from techniques.bayes_opt import BayesOpt, expected_improvement_fast
from techniques.gaussian_process import (
    JITTER,
    GPHyper,
    PoolPosterior,
    fit_hyperparameters,
    matern52,
    neg_log_marginal_likelihood,
    neg_log_posterior,
)
from techniques.surrogate import expected_improvement
from tests.techniques.driven import run_technique
from tests.techniques.test_surrogate import smooth_objective, smooth_space


def test_registered_and_summary() -> None:
    t = create_technique("BayesOpt", seed=1)
    assert isinstance(t, BayesOpt)
    assert t.summary and "\n" not in t.summary


def test_bad_options_name_the_argument() -> None:
    with pytest.raises(TechniqueError, match="refit_growth"):
        BayesOpt(refit_growth=1.0)
    with pytest.raises(TechniqueError, match="unknown option"):
        BayesOpt(lengthscale=1.5)
    with pytest.raises(TechniqueError, match="incumbent must be 'mean'"):
        BayesOpt(incumbent="best")


def test_lml_gradient_matches_finite_differences() -> None:
    rng = np.random.default_rng(0)
    X = rng.random((25, 3))
    y = np.sin(3 * X[:, 0]) + X[:, 1] ** 2 + 0.05 * rng.normal(size=25)
    y = (y - y.mean()) / y.std()
    theta = np.log([0.4, 0.9, 2.0, 1.3, 0.01])
    _, g = neg_log_marginal_likelihood(theta, X, y)
    h = 1e-6
    for k in range(len(theta)):
        e = np.zeros_like(theta)
        e[k] = h
        num = (neg_log_marginal_likelihood(theta + e, X, y)[0] - neg_log_marginal_likelihood(theta - e, X, y)[0]) / (2 * h)
        assert num == pytest.approx(g[k], rel=1e-4, abs=1e-6)


@pytest.mark.parametrize("prior", ["gamma", "dimension"])
def test_map_objective_gradient_matches_finite_differences(prior: str) -> None:
    rng = np.random.default_rng(3)
    X = rng.random((20, 3))
    y = np.cos(4 * X[:, 1]) + 0.1 * rng.normal(size=20)
    y = (y - y.mean()) / y.std()
    theta = np.log([0.3, 1.5, 4.0, 0.8, 0.02])
    f, g = neg_log_posterior(theta, X, y, prior)
    assert f > neg_log_marginal_likelihood(theta, X, y)[0] - 50  # a finite penalty was added, not a failure value
    h = 1e-6
    for k in range(len(theta)):
        e = np.zeros_like(theta)
        e[k] = h
        num = (neg_log_posterior(theta + e, X, y, prior)[0] - neg_log_posterior(theta - e, X, y, prior)[0]) / (2 * h)
        assert num == pytest.approx(g[k], rel=1e-4, abs=1e-6)


def test_gamma_prior_keeps_length_scales_off_the_bound_on_few_points() -> None:
    """With 6 points and an irrelevant input, maximum likelihood may run a length scale to the upper bound (20);
    Gamma(3, 6) keeps every length scale within a few units of the cube."""
    rng = np.random.default_rng(4)
    X = rng.random((6, 4))
    y = np.sin(5 * X[:, 0])
    y = (y - y.mean()) / y.std()
    hyp = fit_hyperparameters(X, y, np.random.default_rng(0), restarts=2, prior="gamma")
    assert hyp.lengthscales.max() < 3.0


def test_unknown_prior_names_the_choices() -> None:
    with pytest.raises(TechniqueError, match="lengthscale_prior"):
        BayesOpt(lengthscale_prior="flat")
    with pytest.raises(ValueError, match="gamma"):
        neg_log_posterior(np.zeros(3), np.zeros((2, 1)), np.zeros(2), "flat")


def test_fit_finds_the_irrelevant_dimension() -> None:
    """ARD: a dimension the function ignores gets a much longer length scale."""
    rng = np.random.default_rng(1)
    X = rng.random((40, 2))
    y = np.sin(6 * X[:, 0])
    hyp = fit_hyperparameters(X, (y - y.mean()) / y.std(), rng, restarts=2)
    assert hyp.lengthscales[1] > 3 * hyp.lengthscales[0]


def _direct(hyp: GPHyper, X: np.ndarray, t: np.ndarray, P: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Textbook GP posterior (R&W eqs. 2.25-2.26) by dense solves."""
    K = matern52(X, X, hyp.lengthscales, hyp.signal) + (hyp.noise + JITTER) * np.eye(len(X))
    Ks = matern52(X, P, hyp.lengthscales, hyp.signal)
    mu = Ks.T @ np.linalg.solve(K, t)
    var = hyp.signal - np.einsum("ij,ij->j", Ks, np.linalg.solve(K, Ks))
    return mu, var


def test_incremental_posterior_equals_direct_solve() -> None:
    rng = np.random.default_rng(2)
    hyp = GPHyper(np.array([0.3, 0.7, 1.1]), 1.4, 1e-3)
    X, P = rng.random((30, 3)), rng.random((200, 3))
    t = rng.normal(size=30)
    post = PoolPosterior(hyp, P)
    for i in range(30):
        post.add(X[i], 0.0 if i % 3 == 0 else t[i])  # every third a fantasy first...
    for i in range(0, 30, 3):
        post.set_target(i, t[i])  # ...then its measured value
    mu, var = post.predict()
    mu_d, var_d = _direct(hyp, X, t, P)
    np.testing.assert_allclose(mu, mu_d, rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(var, np.maximum(var_d, 1e-12), rtol=1e-5, atol=1e-8)
    batch = PoolPosterior.from_data(hyp, X, t, P)
    np.testing.assert_allclose(batch.predict()[0], mu_d, rtol=1e-6, atol=1e-8)
    # a new pool gives the same answer as building on it from the start
    P2 = rng.random((50, 3))
    post.set_pool(P2)
    np.testing.assert_allclose(post.predict()[0], _direct(hyp, X, t, P2)[0], rtol=1e-6, atol=1e-8)
    m1, v1 = post.predict_at(P2[7])
    assert m1 == pytest.approx(post.predict()[0][7], rel=1e-8, abs=1e-10)
    assert v1 == pytest.approx(post.predict()[1][7], rel=1e-6, abs=1e-10)


def test_predictions_between_updates_follow_the_direct_solve() -> None:
    """The mean is kept from L^{-1} t updated row by row (a new observation) or from the first changed
    row on (a fantasy replaced by its measurement): predicting between any two updates must give the
    textbook posterior of the targets at that moment."""
    rng = np.random.default_rng(7)
    hyp = GPHyper(np.array([0.5, 0.9]), 1.2, 1e-3)
    X, P = rng.random((40, 2)), rng.random((60, 2))
    t = rng.normal(size=40)
    post = PoolPosterior(hyp, P)
    cur: list[float] = []
    for i in range(40):
        cur.append(0.5 * t[i])  # a fantasy...
        post.add(X[i], cur[-1])
        if i % 4 == 1:
            j = int(rng.integers(0, i + 1))
            cur[j] = t[j]  # ...a measurement replacing one, not always the last
            post.set_target(j, t[j])
        if i % 3 == 0 or i == 39:
            np.testing.assert_allclose(post.predict()[0], _direct(hyp, X[: i + 1], np.array(cur), P)[0],
                                       rtol=1e-6, atol=1e-8)
            np.testing.assert_allclose(post.predict_at(P[3])[0], post.predict()[0][3], rtol=1e-8, atol=1e-10)
    grown = PoolPosterior.from_data(hyp, X[:10], t[:10], P)  # built at once, then grown
    for i in range(10, 40):
        grown.add(X[i], t[i])
    np.testing.assert_allclose(grown.predict()[0], _direct(hyp, X, t, P)[0], rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(grown.train_mean(), [grown.predict_at(x)[0] for x in X], rtol=1e-6, atol=1e-9)


def test_plug_in_incumbent_is_the_posterior_mean_at_the_observations() -> None:
    """train_mean() (the plug-in EI's incumbent) equals predict_at() at each observation, and with
    a noise term it lies between the noisy targets: the luckiest measurement is pulled back up."""
    rng = np.random.default_rng(5)
    hyp = GPHyper(np.array([0.4, 0.4]), 1.0, 0.2)
    X = rng.random((12, 2))
    t = rng.normal(size=12)
    post = PoolPosterior.from_data(hyp, X, t, rng.random((20, 2)))
    means = post.train_mean()
    np.testing.assert_allclose(means, [post.predict_at(x)[0] for x in X], rtol=1e-6, atol=1e-9)
    assert means.min() > t.min()  # shrunk towards the others
    quiet = PoolPosterior.from_data(GPHyper(hyp.lengthscales, 1.0, 1e-8), X, t, rng.random((20, 2)))
    np.testing.assert_allclose(quiet.train_mean(), t, atol=1e-4)  # no noise: interpolates


def test_fast_ei_equals_the_surrogates_ei() -> None:
    rng = np.random.default_rng(3)
    mu, sd = rng.normal(size=100), rng.random(100) + 0.01
    np.testing.assert_allclose(expected_improvement_fast(mu, sd, 0.2, 0.05), expected_improvement(mu, sd, 0.2, 0.05),
                               rtol=1e-9, atol=1e-12)


def test_beats_random_on_a_smooth_discrete_function() -> None:
    """On the sampled-pool path (the enumerated path is the replay benchmark's; it costs seconds here)."""
    space = smooth_space()
    ours, rand = [], []
    for seed in range(6):
        ours.append(run_technique(BayesOpt(enumerate_limit=1000, pool=500), space, smooth_objective, budget=40, seed=seed).best_value)
        rand.append(run_technique(create_technique("Random"), space, smooth_objective, budget=40, seed=seed).best_value)
    assert np.mean(ours) < np.mean(rand)
    assert sum(o < r for o, r in zip(ours, rand)) >= 5, (ours, rand)


def _trial(space, config, value) -> Trial:
    return Trial(config=config, config_hash=space.config_hash(config), value=value,
                 state="OK" if math.isfinite(value) else "FAILED", technique="BayesOpt", duplicate=False, evaluation=0)


def test_batch_gets_distinct_fresh_points_and_failures_stay_out_of_the_model() -> None:
    space = smooth_space()
    t = BayesOpt(initial=6, enumerate_limit=1000, pool=500)
    t.bind(space, budget=100, rng=np.random.default_rng(4))
    seen: set[str] = set()
    failed: set[str] = set()
    for step in range(6):
        batch = t.propose(4)
        hashes = [space.config_hash(c) for c in batch]
        assert len(batch) == 4 and len(set(hashes)) == 4
        assert not (set(hashes) & seen), "proposed a configuration again"
        seen |= set(hashes)
        for i, c in enumerate(batch):
            value = math.inf if (step + i) % 4 == 0 else smooth_objective(c)
            if not math.isfinite(value):
                failed.add(space.config_hash(c))
            t.observe(_trial(space, c, value))
    t._refit()
    assert t._rows and not (set(t._rows) & failed)
    assert len(t._rows) == len(seen) - len(failed)


def test_small_space_is_enumerated_and_used_up() -> None:
    from ensemble.space import Enum, Integer, SearchSpace

    space = SearchSpace().add(Integer("a", 0, 4), Enum("b", ["x", "y", "z"]))
    space.require("a != 1")
    log = run_technique(create_technique("BayesOpt"), space, lambda c: 1.0 + c["a"] + (c["b"] == "y"),
                        budget=100, seed=0)
    assert log.unique == 12
    assert log.best_value == 1.0


def test_pool_is_sampled_when_the_posterior_would_not_fit_in_memory() -> None:
    from ensemble.space import Integer, SearchSpace

    space = SearchSpace().add(Integer("a", 0, 59), Integer("b", 0, 59))  # 3600 valid points
    big = BayesOpt(pool=200)
    big.bind(space, budget=50, rng=np.random.default_rng(0))
    big.propose(1)
    assert big.state_dict()["pool"] == 3600
    small = BayesOpt(pool=200, memory_mb=0.5)  # 3600 x 50 x 8 bytes = 1.4 MB > 0.5 MB
    small.bind(space, budget=50, rng=np.random.default_rng(0))
    small.propose(1)
    assert 0 < small.state_dict()["pool"] <= 200


class _TickClock:
    """A clock that advances ``step`` seconds per reading: every timed section costs ``step``."""

    def __init__(self, step: float) -> None:
        self.now, self.step = 0.0, step

    def __call__(self) -> float:
        self.now += self.step
        return self.now


def _drive(bo: BayesOpt, cost: float | None, budget: int = 60, clock: Any = None, setup: float = 0.0) -> int:
    """propose/observe on the smooth space with every trial costing ``cost``; returns evaluations made.

    ``clock``: the model's clock (default: 0.01 s per reading); ``setup``:
    seconds the one-time pool build costs on that clock.
    """
    space = smooth_space()
    bo.bind(space, budget=budget, rng=np.random.default_rng(3))
    bo.clock = _TickClock(0.01) if clock is None else clock
    if setup:
        _slow_setup(bo, bo.clock, setup)
    evaluations = 0
    while evaluations < budget and not bo.done:
        configs = bo.propose(1)
        if not configs:
            break
        for c in configs:
            evaluations += 1
            bo.observe(Trial(config=c, config_hash=space.config_hash(c), value=smooth_objective(c), state="OK",
                             technique="BayesOpt", evaluation=evaluations, cost=cost))
    return evaluations


def test_retires_when_its_compute_outweighs_cheap_evaluations() -> None:
    """Microsecond evaluations: the model stops once it has cost more than min_compute and its share."""
    bo = BayesOpt(seed=1, compute_share=0.25)
    made = _drive(bo, cost=1e-6)
    assert bo.done and bo.retired is not None and "exceeded 0.25" in bo.retired
    # each timed section costs 0.01 s here: retired just past min_compute (0.25 s), long before the budget
    assert 0.25 < bo.compute_seconds < 0.3 and made < 60
    assert bo.propose(4) == []
    assert bo.state_dict()["retired"] == bo.retired


def test_keeps_going_when_evaluations_cost_more_than_the_model() -> None:
    expensive = BayesOpt(seed=1, compute_share=0.25)
    assert _drive(expensive, cost=1.0) == 60 and expensive.retired is None
    assert expensive.evaluation_seconds == pytest.approx(60.0)
    unknown = BayesOpt(seed=1, compute_share=0.25)  # no cost on the trials (ask/tell, in-memory harness): never retires
    assert _drive(unknown, cost=None) == 60 and unknown.retired is None
    alone = BayesOpt(seed=1)  # standalone default: retiring would end the run, so it never does
    assert _drive(alone, cost=1e-6) == 60 and alone.retired is None
    with pytest.raises(TechniqueError, match="compute_share"):
        BayesOpt(compute_share=0)


def test_a_retired_model_hands_its_trials_to_the_other_arms() -> None:
    """In the default ensemble a retired BayesOpt is skipped; the run still uses its whole budget."""
    from techniques.default import DefaultEnsemble

    space = smooth_space()
    ens = DefaultEnsemble(seed=2)
    ens.bind(space, budget=120, rng=np.random.default_rng(2))
    bo = next(a for a in ens.arms if isinstance(a, BayesOpt))
    assert bo.compute_share == 0.25  # set by the default ensemble
    bo.clock = _TickClock(0.01)
    seen: set[str] = set()
    by_arm: dict[str, int] = {}
    while len(seen) < 120 and not ens.done:
        for c in ens.propose(1):
            h = space.config_hash(c)
            dup = h in seen
            seen.add(h)
            arm = ens.credit_name(h)
            by_arm[arm] = by_arm.get(arm, 0) + (not dup)
            ens.observe(Trial(config=c, config_hash=h, value=smooth_objective(c), state="OK", technique=arm,
                              duplicate=dup, evaluation=len(seen), cost=1e-6))
    assert bo.retired is not None and len(seen) == 120
    after = by_arm.get("BayesOpt", 0)
    assert after < 30 and sum(v for k, v in by_arm.items() if k != "BayesOpt") >= 90


class _ManualClock:
    """A clock that moves only when the test moves it."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _slow_setup(bo: BayesOpt, clock: _ManualClock, seconds: float) -> None:
    """Make the one-time pool build cost ``seconds`` on ``clock``."""
    build = bo._build_pool

    def slow() -> None:
        clock.now += seconds
        build()

    bo._build_pool = slow  # type: ignore[method-assign]


def _drive_costed(bo: BayesOpt, setup: float, cost: float, budget: int) -> int:
    return _drive(bo, cost, budget, clock=_ManualClock(), setup=setup)


def test_a_one_time_setup_the_run_repays_does_not_retire_the_model() -> None:
    """A 0.5 s pool build against 0.2 s evaluations: sunk once, repaid by a 60-evaluation run.

    Before the set-up was booked apart, the build alone exceeded 0.25 of the
    first evaluation's cost and retired the model after one result (under
    many MPI workers the model then proposed 4 % of the trials).
    """
    bo = BayesOpt(seed=1, compute_share=0.25)
    assert _drive_costed(bo, setup=0.5, cost=0.2, budget=60) == 60
    assert bo.retired is None
    assert bo.setup_seconds == pytest.approx(0.5) and bo.compute_seconds < 0.5
    # the same set-up against a run it can never repay: 0.25 x (60 x 0.001 s) is far below 0.5 s
    short = BayesOpt(seed=1, compute_share=0.25)
    _drive_costed(short, setup=0.5, cost=0.001, budget=60)
    assert short.retired is not None and "set-up" in short.retired


def test_asked_for_one_after_a_wide_batch_it_picks_a_quarter_queue_ahead() -> None:
    """Many workers: a full queue once, then one per result; the model refits per quarter queue, not per pick."""
    space = smooth_space()
    bo = BayesOpt(seed=0, initial=6, enumerate_limit=1000, pool=500)
    bo.bind(space, budget=200, rng=np.random.default_rng(0))
    seen: set[str] = set()
    first = bo.propose(12)
    assert len(first) == 12
    for c in first:
        seen.add(space.config_hash(c))
        bo.observe(_trial(space, c, smooth_objective(c)))
    calls = []
    batch = bo._ei_batch

    def counted(k: int) -> list:
        calls.append(k)
        return batch(k)

    bo._ei_batch = counted  # type: ignore[method-assign]
    for _ in range(9):
        (c,) = bo.propose(1)
        h = space.config_hash(c)
        assert h not in seen, "proposed a configuration again"
        seen.add(h)
        bo.observe(_trial(space, c, smooth_objective(c)))
    assert calls == [3, 3, 3]  # ceil(12 / 4) picks per model pass, handed out one by one
    # a pick handed out ahead that another worker measured meanwhile is dropped, not proposed
    (c,) = bo.propose(1)
    seen.add(space.config_hash(c))
    ahead = list(bo._ahead)
    assert ahead
    for a in ahead:
        bo.observe_foreign(_trial(space, a, smooth_objective(a)))
        seen.add(space.config_hash(a))
    nxt = bo.propose(1)
    assert nxt and space.config_hash(nxt[0]) not in {space.config_hash(a) for a in ahead}


def test_the_default_asks_its_leading_model_for_the_whole_batch_at_once() -> None:
    from techniques.default import DefaultEnsemble

    space = smooth_space()
    ens = DefaultEnsemble(seed=2)
    ens.bind(space, budget=120, rng=np.random.default_rng(2))
    bo = next(a for a in ens.arms if isinstance(a, BayesOpt))
    asked: list[int] = []
    propose = bo.propose

    def recorded(n: int) -> list:
        asked.append(n)
        return propose(n)

    bo.propose = recorded  # type: ignore[method-assign]
    batch = ens.propose(8)
    assert len(batch) == 8 and len({space.config_hash(c) for c in batch}) == 8
    assert asked == [8]
    assert all(ens.credit_name(space.config_hash(c)) == "BayesOpt" for c in batch)


def test_the_last_tenth_of_the_budget_picks_the_lowest_predicted_value(monkeypatch) -> None:
    """exploit_tail: before the tail the pick is EI's; in it, the lowest posterior mean among the candidates."""
    space = smooth_space()
    bo = BayesOpt(seed=0, initial=6, enumerate_limit=1000, pool=500)
    assert bo.exploit_tail == 0.1
    bo.bind(space, budget=40, rng=np.random.default_rng(0))
    predicted: list[np.ndarray] = []
    predict = PoolPosterior.predict

    def spy(self):
        mu, var = predict(self)
        predicted.append(mu.copy())
        return mu, var

    monkeypatch.setattr(PoolPosterior, "predict", spy)
    lowest = []
    for step in range(40):
        avail = bo._avail.copy() if bo._gp is not None else None
        predicted.clear()
        (c,) = bo.propose(1)
        if predicted and avail is not None and bo._avail.size == avail.size:
            mu = predicted[-1]
            i = bo._pool_index[space.config_hash(c)]
            lowest.append((step, bool(mu[i] == mu[avail].min())))
        bo.observe(_trial(space, c, smooth_objective(c)))
    tail = [ok for step, ok in lowest if step >= 36]
    assert tail and all(tail)
    assert not all(ok for step, ok in lowest if step < 36)  # before the tail EI explores
    with pytest.raises(TechniqueError, match="exploit_tail"):
        BayesOpt(exploit_tail=1.0)


def test_with_many_workers_the_model_retires_once_it_holds_them_up() -> None:
    """Compute per result longer than the time between results (mean cost / workers): the workers wait.

    Every timed section costs 0.01 s here, a propose and an observe per
    result: 0.02 s per result.  One-second evaluations leave 10 ms between
    results at 100 workers (the model holds them up) and 1 s at one worker.
    """
    few, many = BayesOpt(seed=1, compute_share=0.25), BayesOpt(seed=1, compute_share=0.25)
    many.workers = 100
    assert _drive(few, cost=1.0) == 60 and few.retired is None
    made = _drive(many, cost=1.0)
    assert many.retired is not None and "between results of 100 workers" in many.retired
    assert made < 60  # it retired after its first 33 results
    alone = BayesOpt(seed=1)  # standalone (compute_share None): never retires
    alone.workers = 100
    assert _drive(alone, cost=1.0) == 60 and alone.retired is None


def test_the_search_driver_tells_the_technique_its_workers() -> None:
    from ensemble import Integer, SearchSpace, Tuner
    from techniques.default import DefaultEnsemble

    space = SearchSpace().add(Integer("a", 0, 30), Integer("b", 0, 30))
    ens = DefaultEnsemble(seed=0)
    with Tuner(space, database="memory://", technique=ens, test_limit=20, seed=0) as tuner:
        asked = [tuner.ask() for _ in range(4)]   # four configurations in flight: four workers
        model = next(a for a in ens.arms if isinstance(a, BayesOpt))
        assert ens.workers >= 4 and model.workers == ens.workers
        for c in asked:
            tuner.tell(c, float(c["a"] + c["b"]))


def _changes(space, a: dict, b: dict) -> int:
    return sum(a[p.name] != b[p.name] for p in space.params)


def test_after_a_tenth_of_the_budget_without_a_new_best_it_restarts_in_another_basin() -> None:
    """restart_patience: once the best has not improved for a tenth of the budget (at least 10
    results), one pick differs from the incumbent in at least half of the parameters, and the
    episode's next picks stay within two changes of the best point measured near it."""
    from ensemble.space import Integer, SearchSpace

    space = SearchSpace(*(Integer(n, 0, 7) for n in "abcd"))
    assert BayesOpt().restart_patience is None  # off by default (docs/TECHNIQUES.md)
    bo = BayesOpt(seed=3, initial=8, restart_patience=0.1)
    bo.bind(space, budget=200, rng=np.random.default_rng(3))
    flat = lambda c: 1.0 if (c["a"], c["b"]) != (0, 0) else 0.5  # one best corner, else flat
    seen: list[dict] = []
    episodes: list[tuple[int, dict, dict]] = []
    within: list[int] = []
    for step in range(80):
        before = bo.restarts
        centre = dict(bo._episode_center) if bo._episode_left > 0 and bo._episode_center else None
        incumbent = min(seen, key=flat) if seen else None
        (c,) = bo.propose(1)
        if bo.restarts > before:
            episodes.append((step, incumbent, c))
        elif centre is not None:
            within.append(_changes(space, centre, c))
        seen.append(c)
        bo.observe(_trial(space, c, flat(c)))
    assert episodes, "no restart in 80 results without a new best"
    first_step = episodes[0][0]
    assert first_step >= 20  # not before the patience (a tenth of 200) has passed
    assert all(_changes(space, inc, c) >= 2 for _, inc, c in episodes)
    assert within and max(within) <= 2
    off = BayesOpt(seed=3, initial=8, restart_patience=None)
    off.bind(space, budget=200, rng=np.random.default_rng(3))
    for _ in range(80):
        (c,) = off.propose(1)
        off.observe(_trial(space, c, flat(c)))
    assert off.restarts == 0
    with pytest.raises(TechniqueError, match="restart_patience"):
        BayesOpt(restart_patience=1.5)


def test_with_failures_in_gp_a_failure_enters_the_model_at_the_worst_value_and_is_not_proposed_again() -> None:
    """The option: every failure becomes a GP observation at the worst finite value, incrementally and after
    a refit alike, so the posterior mean there is (about) that worst value; a failure is still never
    proposed again."""
    space = smooth_space()
    t = BayesOpt(initial=6, enumerate_limit=1000, pool=500, failures_in_gp="always")
    t.bind(space, budget=100, rng=np.random.default_rng(4))
    seen: set[str] = set()
    failed: dict[str, dict[str, Any]] = {}
    for step in range(6):
        for i, c in enumerate(t.propose(4)):
            h = space.config_hash(c)
            assert h not in seen, "proposed a configuration again"
            seen.add(h)
            value = math.inf if (step + i) % 4 == 0 else smooth_objective(c)
            if not math.isfinite(value):
                failed[h] = c
            t.observe(_trial(space, c, value))
    assert failed and set(failed) <= set(t._rows)           # entered incrementally
    t._refit()
    assert set(failed) <= set(t._rows) and len(t._rows) == len(seen)  # and after a refit
    worst = t._worst_target()
    for c in failed.values():
        mu, _ = t._gp.predict_at(t.encode(c))
        assert mu == pytest.approx(worst, abs=0.35)          # the GP's noise lets the fit move it a little
    with pytest.raises(TechniqueError, match="failures_in_gp"):
        BayesOpt(failures_in_gp="yes")


@pytest.mark.parametrize("fail_every, entered", [(2, True), (5, False)])
def test_failures_enter_the_gp_when_common_in_the_initial_design(fail_every: int, entered: bool) -> None:
    """'common': failures enter only when at least FAILURES_COMMON of the initial design failed (half of it
    here: yes; a fifth: no), decided once; the finite results are in the GP either way."""
    from techniques.bayes_opt import FAILURES_COMMON

    assert 1 / fail_every >= FAILURES_COMMON if entered else 1 / fail_every < FAILURES_COMMON
    space = smooth_space()
    t = BayesOpt(initial=10, enumerate_limit=1000, pool=500, failures_in_gp="common")
    t.bind(space, budget=100, rng=np.random.default_rng(5))
    failed: set[str] = set()
    n = 0
    for _ in range(8):
        for c in t.propose(3):
            value = math.inf if n % fail_every == 0 else smooth_objective(c)
            n += 1
            if not math.isfinite(value):
                failed.add(space.config_hash(c))
            t.observe(_trial(space, c, value))
    t._refit()
    assert t._failures_common is entered
    assert bool(set(failed) & set(t._rows)) is entered
    assert len(t._rows) - (len(failed) if entered else 0) == n - len(failed)
