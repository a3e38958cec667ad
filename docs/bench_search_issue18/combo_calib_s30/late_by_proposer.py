"""Session 30 reading: who proposed the late failures of the new default in grid mode (for the next session).

    python -m docs.bench_search_issue18.combo_calib_s30.late_by_proposer [--seeds 3000,3001,3002]

The default (TPE partner, calibrated forest) on the three spaces whose late failures stay above 10 %
(conv A100, conv A6000, pnpoly), grid mode, the harness of scripts/bench_search.py with the model's retirement
off (replay_run.py). For the evaluations after the first 20 % of the budget: per proposing technique, how many
and what share failed.
"""

from __future__ import annotations

import argparse
import collections
import sys

from docs.bench_search_issue18.calib_s29.replay_run import load, run

SPACES = ("convolution_A100", "convolution_A6000", "pnpoly_RTX2080Ti")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seeds", default="3000,3001,3002")
    ns = ap.parse_args()
    from techniques.default import DefaultEnsemble

    for name in SPACES:
        n: collections.Counter = collections.Counter()
        failed: collections.Counter = collections.Counter()
        for seed in (int(s) for s in ns.seeds.split(",")):
            rows, _, m = run(load(name), "grid", seed, DefaultEnsemble(seed=seed))
            for r in rows[int(0.2 * len(rows)):]:
                n[r.technique] += 1
                failed[r.technique] += r.state != "OK"
        total, bad = sum(n.values()), sum(failed.values())
        print(f"{name}: late failures {bad}/{total} = {bad / total:.3f}; by proposer: " + ", ".join(
            f"{k} {failed[k]}/{v} = {failed[k] / v:.2f}" for k, v in n.most_common()))
        sys.stdout.flush()


if __name__ == "__main__":
    main()
