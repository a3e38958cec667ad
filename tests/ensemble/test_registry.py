"""Registry: lazy "module:attr" lookups, clear errors, collisions, variants, entry points."""

from __future__ import annotations

import importlib.metadata
import sys
import textwrap

import pytest

from ensemble import MissingExtraError, TechniqueError
from ensemble import registry as reg

PLUGIN = textwrap.dedent(
    """
    from ensemble.technique import Technique

    class Fixed(Technique):
        name = "Fixed"
        def __init__(self, *, seed=None, value=1, **options):
            super().__init__(seed=seed, **options)
            self.value = value
        def propose(self, n):
            return [{"x": self.value}] * n
        def observe(self, trial):
            pass
    """
)


@pytest.fixture
def isolated(monkeypatch, tmp_path):
    """Fresh registry tables and a plug-in module on sys.path."""
    monkeypatch.setattr(reg, "TECHNIQUE_REGISTRY", reg.Registry("ensemble.techniques", what="technique"))
    monkeypatch.setattr(reg, "APP_REGISTRY", reg.Registry("ensemble.apps", what="app"))
    (tmp_path / "ens_test_plugin.py").write_text(PLUGIN)
    (tmp_path / "ens_test_needs_extra.py").write_text("import ens_missing_gpu_lib\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield reg
    for m in ("ens_test_plugin", "ens_test_needs_extra"):
        sys.modules.pop(m, None)


def test_contract_names_are_registered():
    for name in (
        "AUCBandit",
        "RoundRobin",
        "Random",
        "NelderMead",
        "Torczon",
        "SimulatedAnnealing",
        "DifferentialEvolution",
        "GreedyMutation",
        "NormalGreedyMutation",
        "PatternSearch",
        "GA",
        "PSO",
        "IslandGA",
        "CsTuner",
        "default",
    ):
        assert ":" in reg.TECHNIQUE_REGISTRY.target(name)
        assert name in reg.builtin_technique_names()


def test_registry_module_names_no_package_above_the_core():
    """Built-ins come from entry points (setup.cfg), not from names written in the core."""
    import inspect

    text = inspect.getsource(reg)
    assert "techniques." not in text and "apps." not in text


def test_source_tree_fallback_reads_setup_cfg(monkeypatch):
    """A checkout on PYTHONPATH that was never installed still knows its built-ins."""
    monkeypatch.setattr(importlib.metadata, "entry_points", lambda group: [])
    fresh = reg.Registry("ensemble.techniques", what="technique")
    assert "NelderMead" in fresh.builtin_names() and ":" in fresh.target("NelderMead")


def test_importing_ensemble_imports_no_technique_or_app():
    import subprocess

    code = (
        "import sys, ensemble, ensemble.registry; "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in "
        "('techniques', 'apps', 'measurement', 'deap', 'sklearn', 'pyopencl', 'mpi4py')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(__import__("pathlib").Path(__file__).resolve().parents[2]),
    )
    assert out.stdout.strip() == "[]"


def test_unknown_name_lists_known_names(isolated):
    with pytest.raises(TechniqueError) as info:
        isolated.create_technique("NoSuchThing")
    assert "NoSuchThing" in str(info.value) and "NelderMead" in str(info.value)


def test_register_and_create_lazily(isolated):
    isolated.register("Fixed", "ens_test_plugin:Fixed")
    assert "ens_test_plugin" not in sys.modules
    t = isolated.create_technique("Fixed", seed=3, value=7)
    assert t.propose(2) == [{"x": 7}, {"x": 7}] and t.seed == 3
    assert "Fixed" in isolated.technique_names()


def test_collisions_are_refused(isolated):
    isolated.register("Fixed", "ens_test_plugin:Fixed")
    with pytest.raises(TechniqueError, match="already registered"):
        isolated.register("Fixed", "ens_test_plugin:Fixed")
    with pytest.raises(TechniqueError, match="already registered"):
        isolated.register("NelderMead", "ens_test_plugin:Fixed")


def test_configured_variant(isolated):
    isolated.register("Fixed", "ens_test_plugin:Fixed")
    isolated.register("Fixed9", "Fixed", value=9)
    t = isolated.create_technique("Fixed9", seed=1)
    assert t.value == 9 and t.name == "Fixed9"
    assert isolated.create_technique("Fixed9", value=4).value == 4  # caller options win
    with pytest.raises(TechniqueError, match="neither 'module:attr' nor a registered"):
        isolated.register("Bad", "NotRegistered", value=1)


def test_bad_option_is_a_technique_error(isolated):
    isolated.register("Fixed", "ens_test_plugin:Fixed")
    with pytest.raises(TechniqueError, match="unknown option"):
        isolated.create_technique("Fixed", colour="red")


def test_missing_optional_dependency_names_the_extra(isolated, monkeypatch):
    monkeypatch.setitem(isolated.EXTRAS, "ens_missing_gpu_lib", "opencl")
    isolated.register("NeedsGPU", "ens_test_needs_extra:Thing")
    with pytest.raises(MissingExtraError) as info:
        isolated.create_technique("NeedsGPU")
    assert "pip install 'ensemble-tuner[opencl]'" in str(info.value)
    assert isinstance(info.value, ImportError)


def test_missing_module_or_attr_is_a_technique_error(isolated):
    isolated.register("Ghost", "ens_no_such_module:Ghost")
    with pytest.raises(TechniqueError, match="cannot be imported"):
        isolated.create_technique("Ghost")
    isolated.register("Ghost2", "ens_test_plugin:Nope")
    with pytest.raises(TechniqueError, match="no attribute 'Nope'"):
        isolated.create_technique("Ghost2")


class _EP:
    def __init__(self, name, value):
        self.name, self.value = name, value


def test_entry_points_add_techniques_and_apps(isolated, monkeypatch):
    eps = {
        "ensemble.techniques": [
            _EP("PluginFixed", "ens_test_plugin:Fixed"),
            _EP("NelderMead", "evil:Shadow"),
        ],
        "ensemble.apps": [_EP("plugin-app", "ens_test_plugin:Fixed")],
    }
    monkeypatch.setattr(
        importlib.metadata, "entry_points", lambda group: eps.get(group, [])
    )
    assert "PluginFixed" in isolated.technique_names()
    assert (
        isolated.TECHNIQUE_REGISTRY.target("NelderMead") != "evil:Shadow"
    )  # built-ins cannot be shadowed
    assert isolated.create_technique("PluginFixed").propose(1) == [{"x": 1}]
    assert "plugin-app" in isolated.app_names()
    assert isolated.load_app("plugin-app").__name__ == "Fixed"


def test_register_app_refuses_collision(isolated):
    isolated.register_app("demo-x", "ens_test_plugin:Fixed")
    with pytest.raises(Exception, match="already registered"):
        isolated.register_app("demo-x", "ens_test_plugin:Fixed")


def test_ensemble_tune_stays_callable_when_the_submodule_is_imported_first():
    import importlib.util
    import subprocess

    if importlib.util.find_spec("ensemble.tune") is None:
        pytest.skip("ensemble.tune not present yet")
    code = (
        "import ensemble.tune, ensemble; "
        "ensemble.tune.tune = lambda *a, **k: ('called', a, k); "
        "print(ensemble.tune(1, space=2)[0], callable(ensemble.tune))"
    )
    root = __import__("pathlib").Path(__file__).resolve().parents[2]
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=str(root),
    )
    assert out.stdout.split() == ["called", "True"]


def test_library_logger_has_a_null_handler_and_never_touches_the_root_logger():
    import logging

    import ensemble
    from ensemble import logging as elog

    assert ensemble is not None
    root_handlers = list(logging.getLogger().handlers)
    lib = logging.getLogger("ensemble")
    assert any(isinstance(h, logging.NullHandler) for h in lib.handlers)
    assert elog.get_logger("space").name == "ensemble.space"
    assert elog.get_logger("ensemble.driver").name == "ensemble.driver"
    h = elog.enable_default_handler(logging.WARNING)
    assert elog.enable_default_handler(logging.WARNING) is h  # idempotent
    elog.disable_default_handler()
    assert h not in lib.handlers
    assert logging.getLogger().handlers == root_handlers


def test_technique_base_contract():
    import dataclasses

    import numpy as np

    from ensemble import SearchSpace, Technique, Trial
    from ensemble.space import Integer

    with pytest.raises(TypeError):
        Technique()  # abstract

    class Echo(Technique):
        name = "Echo"

        def __init__(self, *, seed=None, **options):
            super().__init__(seed=seed, **options)
            self.own, self.foreign = [], []

        def propose(self, n):
            return self.space.sample(self.rng, n)

        def observe(self, trial):
            self.own.append(trial)

        def observe_foreign(self, trial):
            self.foreign.append(trial)

    with pytest.raises(TechniqueError, match=r"unknown option\(s\) \['speed'\]"):
        Echo(speed=3)
    t = Echo(seed=1)
    with pytest.raises(TechniqueError, match="bind"):
        t._need_space()
    space = SearchSpace(Integer("a", 0, 9))
    t.bind(space, budget=10, rng=np.random.default_rng(4))
    assert all(space.is_valid(c) for c in t.propose(3))
    trials = [
        Trial({"a": 1}, "h1", 1.0, "OK", "Echo"),
        Trial(
            {"a": 2},
            "h2",
            float("inf"),
            "FAILED",
            "Other",
            duplicate=True,
            evaluation=1,
        ),
    ]
    t.restore(trials)
    assert [x.config_hash for x in t.own] == ["h1"] and [
        x.config_hash for x in t.foreign
    ] == ["h2"]
    assert trials[0].ok and not trials[1].ok
    assert not t.done and t.credit_name("h1") == "Echo" and t.state_dict() == {}
    with pytest.raises(dataclasses.FrozenInstanceError):
        trials[0].value = 0.0  # type: ignore[misc]
