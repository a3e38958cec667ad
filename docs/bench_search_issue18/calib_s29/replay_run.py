"""One run of a technique on a replayed space, as scripts/bench_search.py runs it; the rows it measured.

Shared by the session-29 reading scripts here and ../combo_s29/who_proposed.py.
"""

from __future__ import annotations

from typing import Any

from apps.replay import load_space
from ensemble.driver import RunSession
from ensemble.registry import create_technique
from ensemble.settings import RunSettings
from ensemble.storage import open_storage
from scripts.bench_search import Methodology, _ReplayFunction, _stall_guard
from techniques.bayes_opt import BayesOpt

SPACES = "../shared/data/spaces"


def load(name: str) -> Any:
    """The replayed space ``name`` (e.g. convolution_A100) from the shared data."""
    return load_space(f"{SPACES}/{name}.json.gz")


def run(space: Any, mode: str, seed: int, technique: Any = None) -> tuple[list[Any], Any, Methodology]:
    """(unique measured rows in order, the search space, the methodology) of one run at the space's budget."""
    m = Methodology(space.scalars(mode))
    app = _ReplayFunction(space, mode)
    tech = technique if technique is not None else create_technique("default", seed=seed)
    for arm in getattr(tech, "arms", []):
        if isinstance(arm, BayesOpt):
            # as bench_search's default (--model-retirement off): a retirement decided by this machine's
            # timing (the first run of a process pays the imports) would make the reading irreproducible
            arm.compute_share = None
    _stall_guard(tech, app.space(), 2000)
    store = open_storage("memory://")
    session = RunSession(app, RunSettings(database="memory://", test_limit=m.budget, seed=seed, quiet=True,
                                          run_name="x"), app_ref="x", technique=tech, storage=store)
    session.run()
    rows = [r for r in store.trials(session.run_id) if not r.duplicate]
    return rows, app.space(), m
