"""Session 15's options (issue 12): arms that follow the ensemble's best, and CsTuner's unguided sample and floor.

``follow_incumbent`` on NelderMead and SimulatedAnnealing (used by the
design-card preset), CsTuner's ``unguided`` and ``dataset_floor``: each one
off by default, each checked for what it does, for reproducibility with a
seed, and for a bad value naming the option (docs/CSTUNER.md, session 15).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from ensemble.errors import TechniqueError
from ensemble.space import Enum, Integer, SearchSpace
from ensemble.technique import Trial
from techniques.annealing import SimulatedAnnealing
from techniques.cstuner.ensemble import CsTunerEnsemble
from techniques.cstuner.technique import CsTuner
from techniques.nelder_mead import NelderMead
from tests.techniques.driven import run_technique
from tests.techniques.test_cstuner_technique import (
    _dataset_then_fit,
    stencil_like,
    stencil_time,
)


def grid() -> SearchSpace:
    return SearchSpace().add(Integer("a", 0, 1000), Integer("b", 0, 1000), Integer("c", 0, 1000))


def bowl(c: dict) -> float:
    return 1.0 + ((c["a"] - 700) ** 2 + (c["b"] - 300) ** 2 + (c["c"] - 500) ** 2) / 1e5


def _trial(space: SearchSpace, cfg: dict, value: float, technique: str) -> Trial:
    return Trial(config=dict(cfg), config_hash=space.config_hash(cfg), value=value, state="OK",
                 technique=technique)


def _own(tech, space: SearchSpace, configs: list[dict]) -> None:
    for cfg in configs:
        tech.observe(_trial(space, cfg, bowl(cfg), type(tech).__name__))


def _nelder_mead_with_foreign_best(follow: bool) -> tuple[NelderMead, dict]:
    """A simplex one step in; then another arm reports a configuration better than all of it.

    The simplex checks at the start of each iteration, so the step under way
    (here a reflection and its expansion) finishes first: at most two more
    proposals of the old simplex.
    """
    space = grid()
    nm = NelderMead(seed=3, follow_incumbent=follow)
    nm.bind(space, budget=200, rng=np.random.default_rng(3))
    _own(nm, space, nm.propose(4))                     # the initial simplex (d + 1 = 4 vertices)
    _own(nm, space, nm.propose(1))                     # a reflection
    better = {"a": 700, "b": 300, "c": 500}            # the bowl's minimum
    nm.observe_foreign(_trial(space, better, bowl(better), "CsTuner"))
    for _ in range(3):
        got = nm.propose(4)
        if nm.restarts:
            break
        _own(nm, space, got)
    return nm, better


def test_nelder_mead_follow_incumbent_restarts_the_simplex_at_another_arms_best() -> None:
    nm, better = _nelder_mead_with_foreign_best(True)
    assert nm.follows == 1 and nm.restarts == 1
    assert nm._step_configs[0] == better               # the new simplex's first vertex is the incumbent
    assert nm._size == nm.initial_size                 # at full size


def test_nelder_mead_keeps_its_simplex_by_default() -> None:
    nm, better = _nelder_mead_with_foreign_best(False)
    assert nm.follows == 0 and nm.restarts == 0 and not nm.follow_incumbent
    assert better not in nm._step_configs


def test_nelder_mead_follows_only_a_best_better_than_its_simplex() -> None:
    space = grid()
    nm = NelderMead(seed=3, follow_incumbent=True)
    nm.bind(space, budget=200, rng=np.random.default_rng(3))
    _own(nm, space, nm.propose(4))
    worse = {"a": 0, "b": 1000, "c": 0}
    nm.observe_foreign(_trial(space, worse, 1e9, "CsTuner"))
    nm.propose(1)
    assert nm.follows == 0 and nm.restarts == 0


def test_annealing_follow_incumbent_moves_the_walk_to_another_arms_best() -> None:
    space = grid()
    sa = SimulatedAnnealing(seed=5, follow_incumbent=True, step=0.01)
    sa.bind(space, budget=200, rng=np.random.default_rng(5))
    _own(sa, space, sa.propose(1))                     # the start
    _own(sa, space, sa.propose(1))                     # one move
    better = {"a": 700, "b": 300, "c": 500}
    far_before = sa.propose(1)[0]
    sa.observe_foreign(_trial(space, better, bowl(better), "CsTuner"))
    _own(sa, space, [far_before])
    nxt = sa.propose(1)[0]
    assert sa.follows == 1
    # a step of width <= 0.01 of the range from the incumbent, not from the walk's old state
    assert all(abs(nxt[k] - better[k]) <= 60 for k in better)
    assert any(abs(far_before[k] - better[k]) > 60 for k in better)


def test_annealing_keeps_its_walk_by_default() -> None:
    space = grid()
    sa = SimulatedAnnealing(seed=5, step=0.01)
    sa.bind(space, budget=200, rng=np.random.default_rng(5))
    _own(sa, space, sa.propose(1))
    _own(sa, space, sa.propose(1))
    cur = sa.propose(1)[0]
    better = {"a": 700, "b": 300, "c": 500}
    sa.observe_foreign(_trial(space, better, bowl(better), "CsTuner"))
    _own(sa, space, [cur])
    nxt = sa.propose(1)[0]
    assert sa.follows == 0 and not sa.follow_incumbent
    assert any(abs(nxt[k] - better[k]) > 60 for k in better)


def test_the_preset_passes_follow_incumbent_to_its_local_arms_only() -> None:
    preset = CsTunerEnsemble(seed=0)                   # on by default since session 15
    assert preset.follow_incumbent is True
    nm, sa, cs = preset.arms
    assert nm.follow_incumbent and sa.follow_incumbent and isinstance(cs, CsTuner)
    off = CsTunerEnsemble(seed=0, follow_incumbent=False)
    assert not off.arms[0].follow_incumbent and not off.arms[1].follow_incumbent
    from techniques.cstuner.variants import CsTunerEnsembleBeforeFollow

    before = CsTunerEnsembleBeforeFollow(seed=0)       # the preset before session 15, for side-by-side runs
    assert not before.arms[0].follow_incumbent and not before.arms[1].follow_incumbent
    assert before.name == "cstuner-ensemble-before-follow"


def test_the_default_ensemble_keeps_its_nelder_mead_as_it_was() -> None:
    from techniques.default import DefaultEnsemble

    nm = next(a for a in DefaultEnsemble(seed=0).arms if isinstance(a, NelderMead))
    assert not nm.follow_incumbent and not NelderMead().follow_incumbent and not SimulatedAnnealing().follow_incumbent


def test_the_preset_with_follow_incumbent_is_reproducible_and_its_arms_follow() -> None:
    def run(seed: int) -> tuple[list[str], CsTunerEnsemble]:
        preset = CsTunerEnsemble(seed=seed, follow_incumbent=True)
        log = run_technique(preset, stencil_like(), stencil_time, budget=150, seed=seed)
        assert log.unique == 150
        return log.hashes, preset

    first, preset = run(7)
    again, _ = run(7)
    other, _ = run(8)
    assert first == again and first != other
    assert preset.arms[0].follows + preset.arms[1].follows > 0


def test_unguided_all_keeps_every_candidate_when_no_model_ranks_them() -> None:
    noise = np.random.default_rng(11)
    values: dict[str, float] = {}

    def value(c: dict) -> float:
        return values.setdefault(stencil_like().config_hash(c), 1.0 + float(noise.random()))

    ratio = CsTuner(seed=11, samples=40)
    ratio.bind(stencil_like(), budget=400, rng=np.random.default_rng(11))
    _dataset_then_fit(ratio, value, 40)
    assert ratio.models == {} and len(ratio._sampled) == math.ceil(0.1 * len(ratio._pool))
    noise = np.random.default_rng(11)
    values.clear()
    every = CsTuner(seed=11, samples=40, unguided="all")
    every.bind(stencil_like(), budget=400, rng=np.random.default_rng(11))
    _dataset_then_fit(every, value, 40)
    assert every.models == {} and len(every._sampled) == len(every._pool) and every.ratio == 1.0


def test_unguided_all_leaves_a_checked_model_in_charge() -> None:
    tech = CsTuner(seed=12, samples=40, unguided="all")
    tech.bind(stencil_like(), budget=400, rng=np.random.default_rng(12))
    _dataset_then_fit(tech, stencil_time, 40)
    assert "objective" in tech.models and len(tech._sampled) < len(tech._pool)


@pytest.mark.parametrize("unguided", ["ratio", "all"])
def test_unguided_runs_use_the_whole_budget_and_repeat_with_a_seed(unguided: str) -> None:
    logs = [run_technique(CsTuner(seed=4, unguided=unguided), stencil_like(), stencil_time, budget=120, seed=4)
            for _ in range(2)]
    assert logs[0].unique == 120 and logs[0].hashes == logs[1].hashes


def test_dataset_floor_identifiable_leaves_one_value_parameters_out_of_the_floor() -> None:
    space = stencil_like().add(Enum("filter", [3]), Enum("cmem", [1]))   # 8 parameters, 6 with several values
    default = CsTuner(seed=2)
    default.bind(space, budget=40, rng=np.random.default_rng(2))
    assert default.n_samples == 9                                        # len(parameters) + 1
    ident = CsTuner(seed=2, dataset_floor="identifiable")
    log = run_technique(ident, space, stencil_time, budget=40, seed=2)
    assert ident.n_samples == 7 and log.unique == 40
    assert ("filter", "cmem") in ident.cvs                               # grouping unchanged: only the floor
    big = CsTuner(seed=2, dataset_floor="identifiable")
    big.bind(space, budget=400, rng=np.random.default_rng(2))
    assert big.n_samples == 40                                           # above the floor: 10 % as before


def test_bad_session15_options_name_the_argument() -> None:
    with pytest.raises(TechniqueError, match="unguided"):
        CsTuner(unguided="none")
    with pytest.raises(TechniqueError, match="dataset_floor"):
        CsTuner(dataset_floor="free")
    with pytest.raises(TechniqueError, match="follow_incumbent"):
        NelderMead(follow_incumbent="no")
    with pytest.raises(TechniqueError, match="follow_incumbent"):
        SimulatedAnnealing(follow_incumbent=1)
    with pytest.raises(TechniqueError, match="follow_incumbent"):
        SimulatedAnnealing(follow_incumbent="warm")
    with pytest.raises(TechniqueError, match="follow_incumbent"):
        CsTunerEnsemble(follow_incumbent="yes")


def test_group_cost_tuples_shares_the_budget_a_large_ga_group_could_take() -> None:
    def at_groups(**options) -> CsTuner:
        tech = CsTuner(seed=12, samples=40, **options)
        tech.bind(stencil_like(), budget=400, rng=np.random.default_rng(12))
        _dataset_then_fit(tech, stencil_time, 40)
        tech._group_index = 0
        return tech

    base = dict(stencil_like().sample(np.random.default_rng(0), 1)[0])
    cheap = at_groups()                                   # a GA group charged one generation (32)
    assert cheap._group_share(base, 1000) is None         # the pass "fits": the GA may take the whole budget
    tuples = at_groups(group_cost="tuples")               # charged its 1000 tuples: the budget cannot pay
    remaining = tuples.budget - len(tuples.known) - len(tuples._outstanding)
    assert tuples._group_share(base, 1000) == remaining // len(tuples.groups)


@pytest.mark.parametrize("group_cost", ["generation", "tuples"])
def test_group_cost_runs_use_the_whole_budget_and_repeat_with_a_seed(group_cost: str) -> None:
    logs = [run_technique(CsTuner(seed=6, group_cost=group_cost), stencil_like(), stencil_time, budget=150, seed=6)
            for _ in range(2)]
    assert logs[0].unique == 150 and logs[0].hashes == logs[1].hashes


def test_bad_group_cost_names_the_argument() -> None:
    with pytest.raises(TechniqueError, match="group_cost"):
        CsTuner(group_cost="all")


def test_annealing_cold_rejoins_the_best_only_once_cold() -> None:
    space = grid()
    better = {"a": 700, "b": 300, "c": 500}

    def walk(t_start: float) -> SimulatedAnnealing:
        sa = SimulatedAnnealing(seed=5, follow_incumbent="cold", t_start=t_start, t_end=t_start / 2, step=0.01)
        sa.bind(space, budget=200, rng=np.random.default_rng(5))
        _own(sa, space, sa.propose(1))
        sa.observe_foreign(_trial(space, better, bowl(better), "CsTuner"))
        for _ in range(3):
            _own(sa, space, sa.propose(1))
        return sa

    hot = walk(0.5)                                    # exp(-1/0.5) = 0.14: a free walk
    assert hot.follows == 0
    cold = walk(0.05)                                  # exp(-1/0.05) = 2e-9 < 1e-4: back to the best
    assert cold.follows >= 1
    nxt = cold.propose(1)[0]
    assert all(abs(nxt[k] - better[k]) <= 60 for k in better)


def test_the_preset_cold_option_touches_annealing_only() -> None:
    nm, sa, _ = CsTunerEnsemble(seed=0, follow_incumbent="cold").arms
    assert nm.follow_incumbent is False and sa.follow_incumbent == "cold"
