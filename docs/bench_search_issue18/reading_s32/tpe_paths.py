"""Session 32 reading (issue 18): by which path TPE, inside the default, proposes its late picks in grid mode.

    python -m docs.bench_search_issue18.reading_s32.tpe_paths convolution_A100 8000

Paths: "ranked, filtered" (a fit whose candidates included some with P >= the threshold: only those ranked),
"ranked, none likely" (no candidate reached the threshold: all ranked), "uniform fallback" (every drawn
candidate already seen: ``_random_unseen``). Per path: late picks, how many failed, and P(success) of the
shared failure model when the pick was made (mean). Seeds 8000-8009 were read by the session-32 screen.
"""

from __future__ import annotations

import collections
import sys

import numpy as np

from docs.bench_search_issue18.calib_s29.replay_run import load, run
from techniques.default import DefaultEnsemble
from techniques.tpe import TPE


def main() -> None:
    name, seed = sys.argv[1], int(sys.argv[2])
    path: dict[str, str] = {}
    pick_p: dict[str, float] = {}
    orig_rank, orig_rand = TPE._fit_and_rank, TPE._random_unseen

    def rank(self: TPE) -> None:
        orig_rank(self)
        if self._ranked:
            p = np.asarray(self.p_success([c for _, c in self._ranked]), dtype=float)
            label = "ranked, filtered" if (p >= self.feasible_threshold).any() else "ranked, none likely"
            for (h, _), pi in zip(self._ranked, p):
                path.setdefault(h, label)
                pick_p.setdefault(h, float(pi))

    def rand(self: TPE):  # type: ignore[no-untyped-def]
        c = orig_rand(self)
        if c is not None:
            h = self.hash(c)
            path[h] = "uniform fallback"
            pick_p[h] = float(np.asarray(self.p_success([c]), dtype=float)[0]) if self.feasibility else 1.0
        return c

    TPE._fit_and_rank, TPE._random_unseen = rank, rand
    rows, _, _ = run(load(name), "grid", seed, DefaultEnsemble(seed=seed))
    TPE._fit_and_rank, TPE._random_unseen = orig_rank, orig_rand
    start = int(0.2 * len(rows))
    n: collections.Counter = collections.Counter()
    bad: collections.Counter = collections.Counter()
    ps: dict[str, list[float]] = collections.defaultdict(list)
    for r in rows[start:]:
        if r.technique != "TPE":
            continue
        h = r.config_hash
        k = path.get(h, "?")
        n[k] += 1
        bad[k] += str(getattr(r.state, "value", r.state)) != "OK"
        ps[k].append(pick_p.get(h, float("nan")))
    print(f"{name} seed {seed}: TPE's late picks by path")
    for k, v in n.most_common():
        print(f"  {k}: {v} picks, {bad[k]} failed, mean P at the pick {np.nanmean(ps[k]):.2f}")


if __name__ == "__main__":
    main()
