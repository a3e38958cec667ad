"""Issue 17, session 28: j3d7pt and j3d27pt with l2pf in the space (the default) and without (--require l2pf==0).

    python3 docs/stencil_gpu_results/issue17_l2pf_s28/summarise.py

Each stencil ran in one call on two H200s (<stencil>/gpu0/with, <stencil>/gpu1/without), then every pick of both
arms was re-timed in one process (<stencil>/retime_<stencil>.json). The figure of a pick is the mean of the two
re-timing passes. Prints the table of docs/STENCILS.md ("Issue 17, session 28") and writes l2pf_check.json.
"""

from __future__ import annotations

import glob
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))


def main() -> None:
    from apps.stencil.cuda_gen import cuda_baseline

    base = cuda_baseline(opt_in=["l2pf"])  # both arms' configurations hold l2pf (0 in the without-arm)
    out = []
    for st in ("j3d7pt", "j3d27pt"):
        with open(os.path.join(HERE, st, f"retime_{st}.json")) as f:
            rt = json.load(f)
        retimed = {json.dumps({**base, **r["config"]}, sort_keys=True): (r["pass1_pct"] + r["pass2_pct"]) / 2
                   for r in rt["rows"]}
        arms: dict[str, dict[int, dict]] = {}
        for arm in ("with", "without"):
            for p in glob.glob(os.path.join(HERE, st, "gpu*", arm, "**", "bench_stencil_cuda.json"), recursive=True):
                with open(p) as f:
                    for r in json.load(f)["cuda"]:
                        full = {**base, **r["tuned_config"]}
                        assert r["search"].startswith("ensemble.tune"), r["search"]
                        arms.setdefault(arm, {})[r["seed"]] = {
                            "seed": r["seed"], "recorded_pct": 100 * r["tuned_roof_frac"],
                            "retimed_pct": retimed[json.dumps(full, sort_keys=True)], "l2pf": full["l2pf"],
                            "require": r.get("require"), "trial_states": r.get("trial_states")}
        seeds = sorted(set(arms["with"]) & set(arms["without"]))
        med = {a: statistics.median(arms[a][s]["retimed_pct"] for s in seeds) for a in arms}
        for a in ("without", "with"):
            rows = [arms[a][s] for s in seeds]
            vals = [r["retimed_pct"] for r in rows]
            out.append({"stencil": st, "arm": f"{a} l2pf", "device": rt["device"], "searches": len(rows),
                        "median_pct_roofline": med[a], "worst_pct_roofline": min(vals),
                        "best_pct_roofline": max(vals), "picks": rows})
            print(f"| {st} | {a} l2pf | {len(rows)} | {med[a]:.1f} | {min(vals):.1f} | {max(vals):.1f} | "
                  + ", ".join(f"s{r['seed']} {r['retimed_pct']:.1f}" + (f" (l2pf={r['l2pf']})" if r["l2pf"] else "")
                              for r in rows) + " |")
        ahead = sum(arms["with"][s]["retimed_pct"] > arms["without"][s]["retimed_pct"] for s in seeds)
        print(f"| {st} | with minus without | | {med['with'] - med['without']:+.1f} | | | with ahead on {ahead} of "
              f"{len(seeds)} seeds |")
    with open(os.path.join(HERE, "l2pf_check.json"), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
