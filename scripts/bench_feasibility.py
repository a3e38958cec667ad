"""Which failure classifier: kernel vote, random forest or GP classifier, measured on the grid spaces.

For each replayed space in ``--space grid`` mode (the whole Cartesian grid;
what is not a recorded valid entry fails), draw ``n`` configurations at
random, teach each :class:`techniques.feasibility.FeasibilityModel` kind their
outcomes, and score its P(success) on every other grid point: Brier score,
log loss, and as a filter at P >= 0.5 the share of failures among what it
accepts and the share of valid points it keeps.  Also the seconds to learn
and predict the whole grid once.  Seeds 0..R-1; means over them.

    python -m scripts.bench_feasibility --repeats 3 --sizes 25,100,400
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np

from apps.replay import load_space
from techniques.feasibility import FeasibilityModel

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_SPACES = sorted(str(p) for p in (ROOT.parent / "shared" / "data" / "spaces").glob("*.json.gz"))


def measure(path: str, sizes: list[int], kinds: list[str], repeats: int) -> list[dict]:
    space = load_space(path)
    sspace = space.to_search_space("grid")
    keys = list(space.keys("grid"))
    ok = np.isfinite(space.scalars("grid"))
    X = np.vstack([sspace.to_unit(dict(zip(space.names, k))) for k in keys])
    rows = []
    for n in sizes:
        for kind in kinds:
            acc: dict[str, list[float]] = {}
            for seed in range(repeats):
                rng = np.random.default_rng(seed)
                train = rng.choice(len(keys), n, replace=False)
                test = np.setdiff1d(np.arange(len(keys)), train)
                t0 = time.perf_counter()
                model = FeasibilityModel.for_space(sspace, kind=kind)
                for i in train:
                    model.add(X[i], "OK" if ok[i] else "FAILED")
                p = model.p_success(X[test])
                secs = time.perf_counter() - t0
                y = ok[test].astype(float)
                pc = np.clip(p, 1e-6, 1 - 1e-6)
                keep = p >= 0.5
                for k, v in {"brier": float(((p - y) ** 2).mean()),
                             "logloss": float(-(y * np.log(pc) + (1 - y) * np.log(1 - pc)).mean()),
                             "accepted_failing": float(1 - y[keep].mean()) if keep.any() else 0.0,
                             "valid_kept": float(keep[y == 1].mean()) if (y == 1).any() else 1.0,
                             "seconds": secs}.items():
                    acc.setdefault(k, []).append(v)
            row = {"space": Path(path).name.split(".")[0], "n": n, "kind": kind,
                   "valid_fraction": float(ok.mean()), **{k: float(np.mean(v)) for k, v in acc.items()}}
            print(json.dumps(row), file=sys.stderr)
            rows.append(row)
    return rows


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m scripts.bench_feasibility", description=__doc__.split("\n\n")[0])
    p.add_argument("spaces", nargs="*", default=DEFAULT_SPACES)
    p.add_argument("--sizes", type=lambda s: [int(x) for x in s.split(",")], default=[25, 100, 400])
    p.add_argument("--kinds", type=lambda s: s.split(","), default=["kernel", "forest", "gp"])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--json-out", default=None)
    args = p.parse_args(argv)
    rows = [r for path in args.spaces for r in measure(path, args.sizes, args.kinds, args.repeats)]
    print("| space | n | kind | Brier | log loss | failures among accepted | valid kept | seconds |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['space']} | {r['n']} | {r['kind']} | {r['brier']:.3f} | {r['logloss']:.3f} | "
              f"{r['accepted_failing']:.3f} | {r['valid_kept']:.3f} | {r['seconds']:.2f} |")
    if args.json_out:
        Path(args.json_out).write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
