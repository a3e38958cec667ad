"""Session 16c's option (issue 12): csTuner's approximate stop on the GA's population.

``approximate_stop="population"``: the group GA keeps copies and children
already measured (looked up, not measured again), and the approximate stop
reads the top-n fitness of a completed generation, copies included (the
paper's "CV of top-n fitness", Section IV-E; CsTuner's default since session
16c; the preset's arm keeps ``"distinct"``).  ``"distinct"`` (the code before
session 16c) reads the n best distinct settings measured in the group, which
a population of distinct, never-measured genomes only reaches once the group
is walked through (docs/cstuner_results/h12_s16c_report.md).
"""

from __future__ import annotations

import numpy as np
import pytest

from ensemble.errors import TechniqueError
from techniques.cstuner.ensemble import ARM_OPTIONS, CsTunerEnsemble
from techniques.cstuner.ga import GenerationalGA
from techniques.cstuner.group_search import GroupSearch
from techniques.cstuner.stopping import ApproximateStop
from techniques.cstuner.technique import CsTuner
from techniques.cstuner.variants import CsTunerBeforeS16c
from tests.techniques.driven import run_technique
from tests.techniques.test_cstuner_technique import stencil_like, stencil_time


def rugged(cfg: dict) -> float:
    """A group whose 300 settings all differ by 3 % steps: ten distinct ones are never within 1 %."""
    return 1.0 + 0.03 * ((cfg["x"] * 37) % 300)


def drive(search: GroupSearch, f=rugged, limit: int = 10_000) -> int:
    """Ask/tell until the search ends; the number of measurements it asked for."""
    asked = 0
    while not search.done and asked < limit:
        got = search.ask(32)
        if not got and not search.pending():
            break
        for index, cfg in got:
            search.tell(index, f(cfg))
        asked += len(got)
    return asked


def group(approximate: str, seed: int = 0) -> GroupSearch:
    return GroupSearch(["x"], [(i,) for i in range(300)], {"x": 0}, np.random.default_rng(seed),
                       population=16, stop=ApproximateStop(top_n=10, threshold=0.01), approximate=approximate)


def test_distinct_stop_walks_through_a_rugged_group_the_population_stop_settles_it() -> None:
    for seed in range(3):
        distinct, population = group("distinct", seed), group("population", seed)
        n_distinct, n_population = drive(distinct), drive(population)
        assert distinct.report().reason in ("stalled", "generations")
        assert n_distinct >= 250                              # nearly every one of the 300 tuples measured
        assert population.report().reason == "cv"            # the paper's approximate stop fires
        assert n_population < n_distinct / 2
        # what it settled on is among the best it measured, and the top-n of its last generation agree
        assert population.report().best_value == min(population.values.values())


def test_population_stop_reads_a_completed_generation_copies_included() -> None:
    search = group("population", 1)
    drive(search)
    gens = search.report().generations
    values = [v for ga in search.model.islands.values() for v in ga.completed.get(gens, [])]
    assert len(values) == 32                                  # 2 sub-populations x 16, copies counted
    top = sorted(values)[:10]
    assert np.std(top) / np.mean(top) < 0.01


def test_ga_with_clones_keeps_copies_and_known_children() -> None:
    rng = np.random.default_rng(4)
    ga = GenerationalGA([64], lambda g: g, rng, population=16, encoding="binary", clones=True)
    for _ in range(12):
        for g in ga.unknown():
            ga.tell(g, rugged({"x": g[0]}))
        ga.advance()
    assert len(set(ga.population)) < len(ga.population)      # copies of the fittest
    assert any(g in ga.fitness for g in ga.population[1:])   # measured children kept (no new measurement)
    assert sorted(ga.completed) == list(range(1, 13))


def test_ga_without_clones_is_as_it_was_distinct_and_novel() -> None:
    rng = np.random.default_rng(4)
    ga = GenerationalGA([64], lambda g: g, rng, population=16, encoding="binary")
    for _ in range(3):
        for g in ga.unknown():
            ga.tell(g, rugged({"x": g[0]}))
        before = set(ga.fitness)
        ga.advance()
        assert len(set(ga.population)) == len(ga.population)
        assert sum(g not in before for g in ga.population) >= len(ga.population) - 1   # the elite aside
    assert ga.completed == {}


def test_cstuner_population_stop_uses_the_whole_budget_repeats_with_a_seed_and_settles_by_cv() -> None:
    logs, techs = [], []
    for _ in range(2):
        tech = CsTuner(seed=6, approximate_stop="population")
        logs.append(run_technique(tech, stencil_like(), stencil_time, budget=200, seed=6))
        techs.append(tech)
    assert logs[0].unique == 200
    assert logs[0].proposals == logs[1].proposals
    assert any(r.mode == "ga" and r.reason == "cv" for r in techs[0].reports)
    other = run_technique(CsTuner(seed=7, approximate_stop="population"), stencil_like(), stencil_time,
                          budget=200, seed=7)
    assert other.proposals != logs[0].proposals


def test_the_default_is_the_population_stop_and_the_option_changes_the_run() -> None:
    runs = {opt: run_technique(CsTuner(seed=6, **({"approximate_stop": opt} if opt else {})), stencil_like(),
                               stencil_time, budget=200, seed=6).proposals
            for opt in (None, "distinct", "population")}
    assert runs[None] == runs["population"]               # the default since session 16c
    assert runs["population"] != runs["distinct"]


def test_as_it_was_variant_and_the_presets_arm_keep_the_distinct_stop() -> None:
    assert CsTunerBeforeS16c(seed=1).approximate_stop == "distinct"
    assert CsTunerBeforeS16c(seed=1, approximate_stop="population").approximate_stop == "distinct"
    assert CsTuner(seed=1).approximate_stop == "population"
    assert ARM_OPTIONS["approximate_stop"] == "distinct"
    preset = CsTunerEnsemble(seed=1)
    arm = next(a for a in preset.arms if isinstance(a, CsTuner))
    assert arm.approximate_stop == "distinct"


def test_bad_approximate_stop_names_the_option() -> None:
    with pytest.raises(TechniqueError, match="approximate_stop"):
        CsTuner(approximate_stop="top-n")
    with pytest.raises(TechniqueError, match="approximate_stop"):
        CsTuner(approximate_stop=True)   # type: ignore[arg-type]
