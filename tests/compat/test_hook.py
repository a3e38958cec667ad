"""The import hook maps ``opentuner`` for one run only and never shadows a real OpenTuner after it."""

from __future__ import annotations

import importlib
import sys

import pytest

from ensemble.compat.opentuner import UnsupportedError
from ensemble.compat.opentuner._hook import ALIASES, opentuner_imports
from ensemble.compat.opentuner.search import technique


@pytest.fixture
def fake_real_opentuner(tmp_path, monkeypatch):
    pkg = tmp_path / "opentuner"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("REAL = True\n")
    (pkg / "extra.py").write_text("REAL_EXTRA = True\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    for name in [n for n in sys.modules if n == "opentuner" or n.startswith("opentuner.")]:
        monkeypatch.delitem(sys.modules, name)
    yield
    for name in [n for n in sys.modules if n == "opentuner" or n.startswith("opentuner.")]:
        del sys.modules[name]


def test_inside_ours_outside_the_real_one(fake_real_opentuner):
    import opentuner as before

    assert before.REAL
    with opentuner_imports():
        import opentuner
        from opentuner.search.manipulator import ConfigurationManipulator

        assert opentuner.__name__ == "ensemble.compat.opentuner"
        assert ConfigurationManipulator.__module__ == "ensemble.compat.opentuner.search.manipulator"
        assert all(sys.modules[a].__name__ == "ensemble.compat." + a for a in ALIASES)
    import opentuner as after

    assert after is before and importlib.import_module("opentuner.extra").REAL_EXTRA


def test_unsupported_module_is_refused_at_import(fake_real_opentuner):
    with opentuner_imports():
        with pytest.raises(UnsupportedError, match="opentuner.search.evolutionarytechniques.*--technique"):
            importlib.import_module("opentuner.search.evolutionarytechniques")
        with pytest.raises(UnsupportedError, match="opentuner.resultsdb.connect.*ensemble-tuner best"):
            importlib.import_module("opentuner.resultsdb.connect")


def test_registered_techniques_are_forgotten_after_the_run():
    with opentuner_imports():
        technique.register(technique.PureRandom(name="Mine"))
        assert "Mine" in technique.registered()
    assert "Mine" not in technique.registered()
