"""Session 32 reading (issue 18): the default's late failures in grid mode, by proposer, by the failure model's
P(success) at the time of the pick, and by which of Kernel Tuner's restrictions the configuration breaks.

    python -m docs.bench_search_issue18.reading_s32.late_p convolution_A100 8000,8001

Seeds 8000-8009 were read by the session-32 screen; no adoption decision rests on this reading. The model is
rebuilt from the run's rows in the order they were measured (the default's arms share one calibrated forest,
a function of the observations it has seen), so P is what the filter saw, up to the duplicates left out.
"""

from __future__ import annotations

import collections
import json
import sys

import numpy as np

from docs.bench_search_issue18.calib_s29.replay_run import load, run
from techniques.default import DefaultEnsemble
from techniques.feasibility import FeasibilityModel

DEFS = {"convolution": "../shared/data/spaces/definitions/convolution_milo.json",
        "dedispersion": "../shared/data/spaces/definitions/dedispersion_milo.json"}
BINS = ((0.0, 0.5), (0.5, 0.7), (0.7, 0.9), (0.9, 1.01))


def conditions(space_name: str) -> list[str]:
    for prefix, path in DEFS.items():
        if space_name.startswith(prefix):
            return [c["Expression"] for c in json.load(open(path))["ConfigurationSpace"]["Conditions"]]
    return []


def broken(config: dict, exprs: list[str], consts: dict) -> str:
    env = {**consts, **config}
    bad = [e for e in exprs if not eval(e, {}, env)]  # noqa: S307 - the published space's own restrictions
    return " & ".join(bad) if bad else "recorded failure"


def main() -> None:
    name, seeds = sys.argv[1], [int(s) for s in sys.argv[2].split(",")]
    space = load(name)
    exprs = conditions(name)
    consts = {"filter_width": 15, "filter_height": 15, "use_cmem": 1, "block_size_z": 1,
              "loop_unroll_factor_channel": 0}
    by_bin: collections.Counter = collections.Counter()
    all_bin: collections.Counter = collections.Counter()
    by_prop: collections.Counter = collections.Counter()
    prop_bin: collections.Counter = collections.Counter()  # (proposer, bin) -> picks
    prop_bin_bad: collections.Counter = collections.Counter()
    kinds: collections.Counter = collections.Counter()
    for seed in seeds:
        rows, sspace, _ = run(space, "grid", seed, DefaultEnsemble(seed=seed))
        model = FeasibilityModel.for_space(sspace, kind="calibrated")
        start = int(0.2 * len(rows))
        for i, r in enumerate(rows):
            x = np.asarray(sspace.to_unit(r.config), dtype=float)
            if i >= start:
                p = float(model.p_success(x[None, :])[0])
                b = next(f"{lo:.1f}-{hi:.1f}" for lo, hi in BINS if lo <= p < hi)
                fail = str(getattr(r.state, "value", r.state)) != "OK"
                all_bin[b] += 1
                prop_bin[r.technique, b] += 1
                prop_bin_bad[r.technique, b] += fail
                if fail:
                    by_bin[b] += 1
                    by_prop[r.technique] += 1
                    kinds[broken(dict(r.config), exprs, consts)] += 1
            model.add(x, r.state)
    total = sum(all_bin.values())
    bad = sum(by_bin.values())
    print(f"{name} seeds {seeds}: late picks {total}, failed {bad} ({bad / total:.3f})")
    print("  by P(success) at the pick: " + ", ".join(
        f"{b}: {by_bin[b]}/{all_bin[b]} fail" for b in sorted(all_bin)))
    print("  failures by proposer: " + ", ".join(f"{k} {v}" for k, v in by_prop.most_common()))
    for t in sorted({k for k, _ in prop_bin}):
        print(f"  {t}: " + ", ".join(f"{b}: {prop_bin_bad[t, b]}/{prop_bin[t, b]} fail"
                                     for b in sorted(all_bin) if prop_bin[t, b]))
    print("  failures by restriction broken:")
    for k, v in kinds.most_common(8):
        print(f"    {v:5d}  {k}")


if __name__ == "__main__":
    main()
