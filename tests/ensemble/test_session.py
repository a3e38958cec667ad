"""The run session: every entry point sets up its run through it (issue 11).

Regression tests for the drift that four copies of the set-up had: seed
files, the results log and the run's status now behave the same whichever
entry point starts the run (``TunerApp.main``, ``ensemble.tune``, the
ask/tell ``Tuner``; MPI in tests/ensemble/test_mpi_run.py).
"""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import ensemble
from ensemble import Integer, RunSettings, SearchSpace, TunerApp
from ensemble.driver import session as session_mod
from ensemble.settings import SettingsError
from ensemble.storage import open_storage

ROOT = Path(__file__).resolve().parents[2]


class Bowl(TunerApp):
    def space(self) -> SearchSpace:
        return SearchSpace().add(Integer("x", 0, 9), Integer("y", 0, 9))

    def run(self, config, limit):
        return float((config["x"] - 3) ** 2 + (config["y"] - 7) ** 2 + 1)


def _bowl(config):
    return Bowl().run(config, None)


@pytest.fixture
def spy(monkeypatch):
    """Count RunSession.prepare calls: the one set-up path."""
    calls: list[str] = []
    orig = session_mod.RunSession.prepare

    def prepare(self):
        calls.append(self.app_ref)
        return orig(self)

    monkeypatch.setattr(session_mod.RunSession, "prepare", prepare)
    return calls


def test_every_entry_point_goes_through_the_session(tmp_path, spy):
    db = f"sqlite:///{tmp_path / 'e.db'}"
    assert Bowl.main(["--database", db, "--test-limit", "3", "--quiet", "--run-name", "main"], exit=False) == 0
    ensemble.tune(_bowl, Bowl().space(), database=db, test_limit=3, run_name="tune")
    tuner = ensemble.Tuner(Bowl().space(), database=db, run_name="asktell", test_limit=2)
    tuner.close()
    assert len(spy) == 3


@pytest.mark.parametrize("entry", ["main", "tune", "tuner"])
def test_seed_files_log_and_status_hold_for_every_entry_point(tmp_path, entry):
    db = f"sqlite:///{tmp_path / 'e.db'}"
    seed, log = tmp_path / "seed.json", tmp_path / "log.jsonl"
    seed.write_text(json.dumps([{"x": 9, "y": 0}]))
    if entry == "main":
        assert Bowl.main(["--database", db, "--test-limit", "4", "--quiet", "--run-name", "r",
                          "--seed-configuration", str(seed), "--results-log", str(log)], exit=False) == 0
    elif entry == "tune":
        ensemble.tune(_bowl, Bowl().space(), database=db, test_limit=4, run_name="r",
                      seed_configurations=[{"x": 9, "y": 0}], results_log=str(log))
    else:
        with ensemble.Tuner(Bowl().space(), database=db, run_name="r", test_limit=4,
                            results_log=str(log)) as tuner:
            while not tuner.done:
                try:
                    c = tuner.ask()
                except ensemble.EnsembleError:
                    break
                tuner.tell(c, _bowl(c))
    store = open_storage(db)
    record = store.get_run("r")
    assert record.status == "finished"
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(lines) >= 4
    if entry != "tuner":
        first = store.trials(record.id)[0]
        assert first.config == {"x": 9, "y": 0} and first.technique == "seed"
    store.close()


def test_tuner_measures_a_seed_file_first(tmp_path):
    seed = tmp_path / "seed.json"
    seed.write_text(json.dumps({"x": 1, "y": 1}))
    tuner = ensemble.Tuner(Bowl().space(), database=f"sqlite:///{tmp_path / 't.db'}", test_limit=3,
                           seed_configurations=[str(seed)])
    assert tuner.ask() == {"x": 1, "y": 1}
    tuner.close()


def test_tuner_tell_uses_only_public_methods():
    """Tuner.tell used to reach into MeasurementDriver._commit; no private attribute of another object now."""
    tree = ast.parse((ROOT / "ensemble" / "tune.py").read_text())
    offenders = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr.startswith("_") and not node.attr.startswith("__"):
            owner = node.value
            if not (isinstance(owner, ast.Name) and owner.id in ("self", "cls")):
                offenders.append(f"line {node.lineno}: .{node.attr}")
    assert offenders == []


def test_memory_store_for_throw_away_runs():
    result = ensemble.tune(_bowl, Bowl().space(), database="memory://", test_limit=12, seed=1)
    assert result.evaluations == 12 and result.best_value >= 1.0


def test_memory_store_refuses_process_workers_before_any_measurement():
    with pytest.raises(SettingsError, match="in-memory store.*sqlite:///"):
        session_mod.run_app(Bowl(), RunSettings(database="memory://", test_limit=4, parallelism=2,
                                                worker_mode="process", quiet=True),
                            app_ref="tests.ensemble.test_session:Bowl")


def _runtime_nodes(tree: ast.AST):
    """Every node except those under ``if TYPE_CHECKING:`` (annotations only, never imported at run time)."""
    todo = [tree]
    while todo:
        node = todo.pop()
        yield node
        for child in ast.iter_child_nodes(node):
            if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
                todo.extend(child.orelse)
                continue
            todo.append(child)


def _imports(path: Path, package: str) -> set[str]:
    """Modules of ``package`` that the file imports at run time, at module level or inside functions."""
    out: set[str] = set()
    for node in _runtime_nodes(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            base = node.module
            for alias in node.names:
                sub = f"{base}.{alias.name}"
                out.add(sub if _module_path(sub) else base)
        elif isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
    return {m for m in out if m == package or m.startswith(package + ".")}


def _module_path(name: str) -> Path | None:
    p = ROOT.joinpath(*name.split("."))
    if p.with_suffix(".py").exists():
        return p.with_suffix(".py")
    if (p / "__init__.py").exists():
        return p / "__init__.py"
    return None


def test_no_import_circle_between_app_cli_drivers_and_mpi():
    """ensemble.app, cli, driver.* and mpi imported each other in a circle (lazy imports included)."""
    names = ["ensemble.app", "ensemble.cli", "ensemble.mpi", "ensemble.tune"] + [
        f"ensemble.driver.{p.stem}" for p in (ROOT / "ensemble" / "driver").glob("*.py") if p.stem != "__init__"]
    graph = {n: {m for m in _imports(_module_path(n), "ensemble") if m in names} for n in names}  # type: ignore[arg-type]
    # the compatibility shim only re-exports; it is not a module of the graph
    graph.pop("ensemble.driver.local", None)
    for deps in graph.values():
        deps.discard("ensemble.driver.local")

    def cycle_from(start: str) -> list[str] | None:
        stack = [(start, [start])]
        while stack:
            node, path = stack.pop()
            for nxt in graph.get(node, ()):
                if nxt == start:
                    return path + [start]
                if nxt not in path:
                    stack.append((nxt, path + [nxt]))
        return None

    cycles = [c for c in (cycle_from(n) for n in graph) if c]
    assert cycles == []


def test_a_worker_cannot_attach_to_an_in_memory_store(capsys):
    from ensemble import cli

    assert cli.main(["worker", "--database", "memory://shared-name"]) == 2
    assert "in-memory store" in capsys.readouterr().err


def test_told_results_carry_no_cost_unless_the_result_gives_one(tmp_path):
    """Ask/tell measures elsewhere: the store records an unknown cost, not zero."""
    db = f"sqlite:///{tmp_path / 'c.db'}"
    with ensemble.Tuner(Bowl().space(), database=db, run_name="c", test_limit=2) as tuner:
        a = tuner.ask()
        tuner.tell(a, 1.0)
        b = tuner.ask()
        tuner.tell(b, ensemble.Result(time=2.0, cost=5.0))
    store = open_storage(db)
    costs = [r.cost for r in store.trials(store.get_run("c").id)]
    store.close()
    assert costs == [None, 5.0]


class _Metered(Bowl):
    def run(self, config, limit):
        return ensemble.Result(time=super().run(config, limit), metrics={"dram_bytes": 8.0 * config["x"]})


@pytest.mark.parametrize("database", ["memory://", "sqlite"])
def test_techniques_see_the_measurement_metrics(tmp_path, database):
    """Trial.metrics carries Result.metrics on every path (same thread via the channel, read back, resume)."""
    from techniques.random_search import Random

    seen = []

    class Watching(Random):
        def observe(self, trial):
            seen.append(trial.metrics)
            super().observe(trial)

    url = database if database.startswith("memory") else f"sqlite:///{tmp_path / 'm.db'}"
    session_mod.run_app(_Metered(), RunSettings(database=url, test_limit=5, seed=1, quiet=True),
                        app_ref="tests.ensemble.test_session:_Metered", technique=Watching(seed=1))
    assert len(seen) == 5 and all(m is not None and "dram_bytes" in m and "time" in m for m in seen)
