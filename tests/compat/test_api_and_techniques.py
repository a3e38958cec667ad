"""opentuner.api.TuningRunManager, and OpenTuner-style techniques: reproducible per seed."""

from __future__ import annotations

import argparse
from typing import ClassVar

from ensemble.compat import opentuner
from ensemble.compat.opentuner import (
    ConfigurationManipulator,
    FloatParameter,
    IntegerParameter,
    Result,
)
from ensemble.compat.opentuner.api import TuningRunManager
from ensemble.compat.opentuner.measurement.interface import (
    DefaultMeasurementInterface,
    MeasurementInterface,
)
from ensemble.compat.opentuner.search import technique
from ensemble.storage import Storage


def _args(*argv: str) -> argparse.Namespace:
    return argparse.ArgumentParser(parents=opentuner.argparsers()).parse_args(list(argv))


class Saving(DefaultMeasurementInterface):
    saved: ClassVar[list[dict]] = []

    def save_final_config(self, configuration):
        Saving.saved.append(configuration.data)


def test_tuning_run_manager_asks_and_records(tmp_path):
    url = f"sqlite:///{tmp_path / 'api.db'}"
    m = ConfigurationManipulator()
    m.add_parameter(IntegerParameter(0, -50, 50))              # an integer name, through the API as well
    api = TuningRunManager(Saving(args=_args(), manipulator=m), _args("--database", url, "--test-limit", "15",
                                                                      "--seed", "3"))
    told = 0
    while True:
        dr = api.get_next_desired_result()
        if dr is None:
            break
        api.report_result(dr, Result(time=float((dr.configuration.data[0] - 4) ** 2)))
        told += 1
    best = api.get_best_configuration()
    api.finish()
    assert told == 15 and set(best) == {0}
    assert Saving.saved[-1] == best
    st = Storage(url)
    (run,) = st.list_runs()
    rows = st.trials(run.id)
    assert len([r for r in rows if not r.duplicate]) == 15
    assert min(r.value for r in rows) == (best[0] - 4) ** 2
    assert all(r.cost is not None and r.cost >= 0 for r in rows if not r.duplicate)


class Walk(technique.SequentialSearchTechnique):
    """A random walk in the generator style, reading each result after its yield."""

    def main_generator(self):
        current = self.driver.get_configuration(self.manipulator.random())
        yield current
        while True:
            cfg = self.manipulator.copy(current.data)
            for p in self.manipulator.parameters(cfg):
                p.op1_randomize(cfg) if p.name == "a" else p.set_unit_value(cfg, p.get_unit_value(cfg) * 0.9)
            cand = self.driver.get_configuration(cfg)
            yield cand
            if self.objective.lt(cand, current):
                current = cand


class Quadratic(MeasurementInterface):
    def manipulator(self):
        m = ConfigurationManipulator()
        m.add_parameter(FloatParameter("a", 0.0, 1.0))
        m.add_parameter(FloatParameter("b", 0.0, 1.0))
        return m

    def run(self, desired_result, input, limit):
        c = desired_result.configuration.data
        return Result(time=(c["a"] - 0.3) ** 2 + c["b"] ** 2)


def _trajectory(tmp_path, name, seed):
    technique.clear_registered()
    technique.register(Walk(name="Walk"))
    url = f"sqlite:///{tmp_path / name}"
    Quadratic.main(_args("--technique", "Walk", "--test-limit", "12", "--seed", str(seed), "--database", url,
                         "--quiet"))
    st = Storage(url)
    (run,) = st.list_runs()
    technique.clear_registered()
    return [(r.config["a"], r.config["b"], r.technique) for r in st.trials(run.id)]


def test_registered_technique_same_seed_same_trajectory(tmp_path):
    first, again = _trajectory(tmp_path, "1.db", 5), _trajectory(tmp_path, "2.db", 5)
    other = _trajectory(tmp_path, "3.db", 6)
    assert first == again and first != other
    assert {t for _, _, t in first} == {"Walk"}


def test_opentuner_default_ensembles_have_opentuners_arms_and_constants():
    """OpenTuner's AUCBanditMetaTechniqueA/B/C, which apps without --technique expect, from our techniques."""
    from ensemble import registry
    from ensemble.compat.opentuner._flags import DEFAULT_TECHNIQUE, TECHNIQUE_NAMES

    assert DEFAULT_TECHNIQUE == TECHNIQUE_NAMES["AUCBanditMetaTechniqueA"] == "OpenTunerA"
    a = registry.create_technique("OpenTunerA", seed=0)
    assert a.labels == ["DifferentialEvolution", "GreedyMutation", "NormalGreedyMutation", "NelderMead"]
    assert (a.window, a.c) == (500, 0.05)
    de, ugm, ngm, _ = a.arms
    assert (de.population, de.cr) == (30, 0.2)                 # DifferentialEvolutionAlt
    assert ugm.rate == 0.1 and (ngm.rate, ngm.sigma) == (0.3, 0.1)
    assert registry.create_technique("OpenTunerB", seed=0).labels == ["DifferentialEvolution", "GreedyMutation"]
    assert registry.create_technique("OpenTunerC", seed=0).labels == ["DifferentialEvolution", "PatternSearch"]
    # each instance owns its arms (no state shared between two runs in one process)
    assert registry.create_technique("OpenTunerA", seed=0).arms[0] is not de


def test_api_without_technique_finds_the_optimum_of_a_cheap_1d_objective(tmp_path):
    """The py_api loop of api_example (60 asks, microsecond objective) on OpenTuner's default ensemble."""
    m = ConfigurationManipulator()
    m.add_parameter(IntegerParameter("x", -200, 200))
    args = _args("--database", f"sqlite:///{tmp_path / 'a.db'}", "--seed", "3")
    api = TuningRunManager(DefaultMeasurementInterface(args=args, manipulator=m), args)
    for _ in range(60):
        dr = api.get_next_desired_result()
        if dr is None:
            break
        api.report_result(dr, Result(time=(dr.configuration.data["x"] - 10) ** 2))
    assert api.get_best_configuration() == {"x": 10}
    api.finish()
