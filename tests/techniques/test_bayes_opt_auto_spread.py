"""``BayesOpt(spread_refits="auto")``: refits in one piece until they would hold the workers up, then spread.

Why (issue 18 point 3, docs/bo_auto_s23/): spreading refits from the start
kept the model at 32 workers but lowered the replay score at 8 simulated
workers (docs/bo_refit_s20/); "auto" leaves every run in which the model
keeps up exactly as it was, and where the throughput test used to retire the
model it switches to spread refits instead, retiring only if that fails too.
"""

from __future__ import annotations

import pytest

from ensemble.errors import TechniqueError
from techniques.bayes_opt import BayesOpt
from tests.techniques.test_bayes_opt import _TickClock as _Clock
from tests.techniques.test_bayes_opt_workers import _bench_space, _stand_in


def test_bad_values_are_refused_with_the_choices() -> None:
    with pytest.raises(TechniqueError, match="True, False or 'auto'"):
        BayesOpt(spread_refits="yes")
    assert BayesOpt(spread_refits="auto").spreading is False
    assert BayesOpt(spread_refits=True).spreading is True


def test_auto_changes_nothing_while_the_model_keeps_up() -> None:
    """8 workers, each timed section 0.1 ms against 25 ms between results: the same picks as False."""
    space = _bench_space()
    runs = []
    for spread in (False, "auto"):
        bo = BayesOpt(seed=4, pool=300, compute_share=0.25, spread_refits=spread)
        bo.clock = _Clock(0.0001)
        runs.append(_stand_in(bo, 8, 150, space))
        assert bo.retired is None and not bo.spreading and bo.spread_since is None and bo._job is None
    assert runs[0] == runs[1]


def test_auto_spreads_where_the_model_used_to_retire_and_retires_only_if_that_fails_too() -> None:
    """20 workers on 1 s evaluations (50 ms between results), 30 ms per timed section (60 ms a result):
    False retires the model at the first full window; "auto" spreads instead and, the sections still
    costing 60 ms a result, retires after a second, fresh window, its reason saying the refits were spread."""
    space = _bench_space()
    plain = BayesOpt(seed=1, pool=300, compute_share=0.25)
    plain.clock = _Clock(0.03)

    def cost_one(bo: BayesOpt) -> None:  # bench costs: 0.2 s in _stand_in; make it 1 s a result
        bo.evaluation_seconds += 0.8

    _stand_in(plain, 20, 400, space, on_result=cost_one)
    assert plain.retired is not None and "with refits spread" not in plain.retired
    retired_plain_at = plain.state_dict()["observations"]

    auto = BayesOpt(seed=1, pool=300, compute_share=0.25, spread_refits="auto")
    auto.clock = _Clock(0.03)
    seen: list[tuple[bool, bool]] = []
    _stand_in(auto, 20, 400, space, on_result=lambda bo: (cost_one(bo), seen.append((bo.spreading, bo.done))))
    assert auto.spread_since is not None and auto.spread_since <= retired_plain_at + 1
    assert auto.retired is not None and "with refits spread" in auto.retired
    switched = next(i for i, (spreading, _) in enumerate(seen) if spreading)
    assert not any(done for _, done in seen[:switched + auto._window()])  # a whole fresh window first
    assert auto.state_dict()["spread_since"] == auto.spread_since


def test_auto_keeps_the_model_when_spread_refits_keep_up() -> None:
    """32 workers, 6.25 ms between results: every timed section 1 ms, and a refit in one piece 30 ms more
    (a burst that fails the 32-result window); spread, the refit steps cost 2 ms each: the model switches
    to spread refits and is kept to the end."""
    space = _bench_space()
    bo = BayesOpt(seed=2, pool=300, compute_share=0.25, spread_refits="auto")
    clock = bo.clock = _Clock(0.001)
    refit, advance = bo._refit, bo._advance

    def one_piece() -> None:
        clock.now += 0.5 if bo.fits else 0.0  # the first fit is set-up, not running compute
        refit()

    def step() -> None:
        if bo._job is not None:
            clock.now += 0.002
        advance()

    bo._refit, bo._advance = one_piece, step  # type: ignore[method-assign]
    order = _stand_in(bo, 32, 400, space)
    assert bo.spreading and bo.spread_since is not None and bo.retired is None
    assert len(order) == 400 and len(set(order)) == 400


def test_the_default_ensemble_gives_its_model_auto() -> None:
    from techniques.default import MODEL_SPREAD_REFITS, DefaultEnsemble

    model = next(a for a in DefaultEnsemble(seed=0).arms if isinstance(a, BayesOpt))
    assert model.spread_refits == MODEL_SPREAD_REFITS
    assert model.spreading is (MODEL_SPREAD_REFITS is True)
