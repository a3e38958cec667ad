"""Who proposed the trials of the default with partner="TPE" on the replay spaces (file mode).

    python -m docs.bench_search_issue18.combo_s29.who_proposed [--seeds 1000,1001,1002]

Runs the same harness as scripts/bench_search.py (RunSession on memory://, the space's budget) and counts the
unique evaluations by the technique that proposed them (the model's retirement off, as in bench_search).
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

from docs.bench_search_issue18.calib_s29.replay_run import run
from scripts.bench_search import DEFAULT_SPACES


def who(space_path: str, seed: int) -> collections.Counter:
    from apps.replay import load_space
    from techniques.default import DefaultEnsemble

    rows, _, _ = run(load_space(space_path), "file", seed, DefaultEnsemble(seed=seed, partner="TPE"))
    return collections.Counter(r.technique for r in rows)


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
