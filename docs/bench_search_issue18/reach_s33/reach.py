"""How high could the file-mode mean go? The best score any tuner recorded per space, over every bench_search JSON.

Reads every ``*.json`` under docs/ written by scripts/bench_search.py (keys ``spaces`` -> ``results``), keeps the
file-mode entries at the current budgets (926 / 414 / 37 / 609 / 299, i.e. the methodology's cutoff) with at
least ``--min-repeats`` seeds, and prints per space the best score any tuner reached in any such run, with the
tuner and file. The mean of those maxima is an optimistic bound on what one tuner has shown (each maximum is
the luckiest of many noisy estimates, taken space by space from different tuners and seed sets).

    python docs/bench_search_issue18/reach_s33/reach.py [--min-repeats 25]
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

BUDGETS = {"convolution_A100": 926, "convolution_A6000": 414, "convolution_W7800": 37, "dedispersion_A100": 609,
           "pnpoly_RTX2080Ti": 299}


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--min-repeats", type=int, default=25)
    p.add_argument("--root", default="docs")
    a = p.parse_args()
    best: dict[str, tuple[float, str, str, int]] = {}
    five: dict[tuple[str, str], dict[str, float]] = {}
    rows = 0
    for f in sorted(Path(a.root).rglob("*.json")):
        try:
            d = json.loads(f.read_text())
        except (OSError, ValueError, UnicodeDecodeError):
            continue
        if not isinstance(d, dict) or not isinstance(d.get("spaces"), list):
            continue
        for s in d["spaces"]:
            if not isinstance(s, dict) or s.get("mode") != "file" or BUDGETS.get(s.get("space")) != s.get("budget"):
                continue
            for label, r in (s.get("results") or {}).items():
                if "random search" in label or not isinstance(r, dict) or r.get("repeats", 0) < a.min_repeats:
                    continue
                rows += 1
                sc = float(r["score"])
                five.setdefault((str(f), label), {})[s["space"]] = sc
                if sc > best.get(s["space"], (-9.0,))[0]:
                    best[s["space"]] = (sc, label, str(f), int(r["repeats"]))
    print(f"{rows} (space, tuner, run) entries with at least {a.min_repeats} seeds")
    print("| space | best score recorded | tuner | seeds | file |\n|---|---|---|---|---|")
    for sp in BUDGETS:
        if sp in best:
            sc, label, f, n = best[sp]
            print(f"| {sp} | {sc:.3f} | {label} | {n} | {f} |")
    if len(best) == len(BUDGETS):
        print(f"\nmean of the per-space maxima: {sum(v[0] for v in best.values()) / len(best):.3f}")
    full = sorted(((sum(v.values()) / len(v), f, label) for (f, label), v in five.items() if len(v) == len(BUDGETS)),
                  reverse=True)
    print(f"\n{len(full)} runs of one tuner on all five spaces in one file; the five best five-space means:")
    for m, f, label in full[:5]:
        print(f"  {m:.3f}  {label}  ({f})")


if __name__ == "__main__":
    main()
