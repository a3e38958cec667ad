"""Session 29: j3d7pt and j3d27pt searched by the default (GP alone) and by the default with partner="TPE".

    python3 docs/stencil_gpu_results/issue18_partner_s29/summarise.py [CALL_DIR NEW_LABEL OUT_JSON [OLD_LABEL]]

(session 30 reads its own call with ``CALL_DIR`` = docs/stencil_gpu_results/issue18_combo_s30/call1, the new
arm's label and that folder's check JSON.)

call1/gpu0/new and call1/gpu1/old are j3d7pt's arms, gpu2/new and gpu3/old j3d27pt's (call1.sh); every pick of
both arms was re-timed in one process per stencil (call1/retime_<stencil>.json). The figure of a pick is the mean
of the two re-timing passes. Prints the table of docs/STENCILS.md ("Session 29: TPE as the default's partner")
and writes partner_check.json.
"""

from __future__ import annotations

import glob
import json
import os
import statistics
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ARMS = {"old": "default (GP alone)", "new": "default, partner TPE"}


def main() -> None:
    from apps.stencil.cuda_gen import cuda_baseline

    call = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "call1")
    if len(sys.argv) > 2:
        ARMS["new"] = sys.argv[2]
    out_json = sys.argv[3] if len(sys.argv) > 3 else os.path.join(HERE, "partner_check.json")
    if len(sys.argv) > 4:  # the "old" arm is the default of the day the call was made
        ARMS["old"] = sys.argv[4]

    base = cuda_baseline()
    out = []
    for st in ("j3d7pt", "j3d27pt"):
        if not os.path.exists(os.path.join(call, f"retime_{st}.json")):
            continue  # a call with one stencil (STENCILS=j3d7pt)
        with open(os.path.join(call, f"retime_{st}.json")) as f:
            rt = json.load(f)
        retimed = {json.dumps({**base, **r["config"]}, sort_keys=True): (r["pass1_pct"] + r["pass2_pct"]) / 2
                   for r in rt["rows"]}
        arms: dict[str, dict[int, dict]] = {}
        for arm in ARMS:
            pattern = os.path.join(call, "gpu*", arm, f"{st}_s*", "bench_stencil_cuda.json")
            for p in glob.glob(pattern):
                with open(p) as f:
                    for r in json.load(f)["cuda"]:
                        full = {**base, **r["tuned_config"]}
                        assert r["search"].startswith("ensemble.tune"), r["search"]
                        arms.setdefault(arm, {})[r["seed"]] = {
                            "seed": r["seed"], "search": r["search"], "recorded_pct": 100 * r["tuned_roof_frac"],
                            "retimed_pct": retimed[json.dumps(full, sort_keys=True)],
                            "streamed": full.get("sd") == "z", "trial_states": r.get("trial_states")}
        seeds = sorted(set(arms["new"]) & set(arms["old"]))
        med = {a: statistics.median(arms[a][s]["retimed_pct"] for s in seeds) for a in arms}
        for a in ("old", "new"):
            rows = [arms[a][s] for s in seeds]
            vals = [r["retimed_pct"] for r in rows]
            out.append({"stencil": st, "arm": ARMS[a], "device": rt["device"], "searches": len(rows),
                        "median_pct_roofline": med[a], "worst_pct_roofline": min(vals),
                        "best_pct_roofline": max(vals), "picks": rows})
            print(f"| {st} | {ARMS[a]} | {len(rows)} | {med[a]:.1f} | {min(vals):.1f} | {max(vals):.1f} | "
                  + ", ".join(f"s{r['seed']} {r['retimed_pct']:.1f}" + ("" if r["streamed"] else " (unstreamed)")
                              for r in rows) + " |")
        ahead = sum(arms["new"][s]["retimed_pct"] > arms["old"][s]["retimed_pct"] for s in seeds)
        print(f"| {st} | new minus old | | {med['new'] - med['old']:+.1f} | | | new ahead on {ahead} of "
              f"{len(seeds)} seeds |")
    with open(out_json, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
