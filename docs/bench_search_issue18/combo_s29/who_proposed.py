"""Who proposed the trials of the default with partner="TPE" on the replay spaces (file mode).

    python -m docs.bench_search_issue18.combo_s29.who_proposed [--seeds 1000,1001,1002]

Runs the same harness as scripts/bench_search.py (RunSession on memory://, the space's budget) and counts the
unique evaluations by the technique that proposed them, before and after the GP's initial design.
"""

from __future__ import annotations

import argparse
import collections
import math
import sys
from pathlib import Path

from apps.replay import load_space
from scripts.bench_search import DEFAULT_SPACES, Methodology, _ReplayFunction, _stall_guard


def who(space_path: str, seed: int) -> collections.Counter:
    from ensemble.driver import RunSession
    from ensemble.settings import RunSettings
    from ensemble.storage import open_storage
    from techniques.default import DefaultEnsemble

    space = load_space(space_path)
    m = Methodology(space.scalars("file"))
    app = _ReplayFunction(space, "file")
    tech = DefaultEnsemble(seed=seed, partner="TPE")
    _stall_guard(tech, app.space(), 2000)
    settings = RunSettings(database="memory://", test_limit=m.budget, seed=seed, quiet=True, run_name="who")
    store = open_storage("memory://")
    session = RunSession(app, settings, app_ref="who", technique=tech, storage=store)
    session.run()
    return collections.Counter(r.technique for r in store.trials(session.run_id) if not r.duplicate)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="1000,1001,1002")
    ns = ap.parse_args()
    seeds = [int(s) for s in ns.seeds.split(",")]
    for path in DEFAULT_SPACES:
        total: collections.Counter = collections.Counter()
        for seed in seeds:
            total += who(path, seed)
        n = sum(total.values())
        print(f"{Path(path).name.split('.')[0]}: " + ", ".join(
            f"{k} {v / n:.2f}" for k, v in total.most_common()) + f" ({len(seeds)} seeds, {n} evaluations)")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
