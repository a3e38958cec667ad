"""Issue 17, session 27: the paired l2pf searches (H200), each pick with its re-timed figure, per arm.

    python3 docs/stencil_gpu_results/issue17_l2pf_s27/summarise.py

Arms by folder: call1 gpu0/gpu2 ran with --opt-in l2pf, gpu1/gpu3 without; call2 and call3 name the arm in the
path (with/, without/). Every with-l2pf search fell back to random sampling (its seeds lacked l2pf, which the
space refused; fixed after the runs), and its arm is named so: each record's 'search' field says which search ran.
Call 4 (session 28) re-ran the with-l2pf arm through ensemble.tune (call4/gpu*/with/).
Re-timed figure: the mean of the two passes of one re-timing of all picks in one process per stencil:
call4/ (session 28, every pick of calls 1-4; the default) or retime4/ (session 27, calls 1-3), chosen by the
first argument. Writes l2pf_search[_<dir>].json beside this script and prints the table of docs/STENCILS.md.
"""

from __future__ import annotations

import glob
import json
import os
import statistics

HERE = os.path.dirname(os.path.abspath(__file__))


def arm_of(path: str) -> str:
    rel = os.path.relpath(path, HERE)
    if "/with/" in rel or rel.startswith(("call1/gpu0", "call1/gpu2")):
        return "with l2pf"
    return "without l2pf"


def main(retime_dir: str = "call4") -> None:
    from apps.stencil.cuda_gen import cuda_baseline
    base = cuda_baseline(opt_in=["l2pf"])  # l2pf = 0 is the generator's plain kernel: the same key either way
    out = []
    for st in ("hypterm", "addsgd6"):
        with open(os.path.join(HERE, retime_dir, f"retime_{st}.json")) as f:
            rt = json.load(f)
        retimed = {json.dumps({**base, **r["config"]}, sort_keys=True):
                   (r["pass1_pct"] + r["pass2_pct"]) / 2 for r in rt["rows"]}
        arms: dict[str, list[dict]] = {}
        for p in sorted(glob.glob(os.path.join(HERE, "call*", "**", "bench_stencil_cuda.json"), recursive=True)):
            if retime_dir == "retime4" and os.path.relpath(p, HERE).startswith("call4"):
                continue  # retime4 ran before call 4
            with open(p) as f:
                data = json.load(f)
            for r in data.get("cuda", []):
                if r.get("stencil") != st:
                    continue
                full = {**base, **r["tuned_config"]}
                key = json.dumps(full, sort_keys=True)
                arm = arm_of(p) + (", random sampling" if r["search"].startswith("random sampling")
                                   else ", ensemble.tune")
                arms.setdefault(arm, []).append({"seed": r.get("seed"), "recorded_pct": 100 * r["tuned_roof_frac"],
                                        "retimed_pct": retimed.get(key), "l2pf": full.get("l2pf", 0),
                                        "search": r["search"][:120], "source": os.path.relpath(p, HERE)})
        for arm, rows in arms.items():
            vals = [r["retimed_pct"] for r in rows]
            rec = {"stencil": st, "arm": arm, "device": rt["device"], "searches": len(rows),
                   "median_pct_roofline": statistics.median(vals), "worst_pct_roofline": min(vals),
                   "best_pct_roofline": max(vals), "picks": sorted(rows, key=lambda r: r["seed"])}
            out.append(rec)
            print(f"| {st} | {arm} | {len(rows)} | {rec['median_pct_roofline']:.1f} | {rec['worst_pct_roofline']:.1f} | "
                  f"{rec['best_pct_roofline']:.1f} | " + ", ".join(
                      f"s{r['seed']} {r['retimed_pct']:.1f}" + (f" (l2pf={r['l2pf']})" if r['l2pf'] else '')
                      for r in sorted(rows, key=lambda r: r["seed"])) + " |")
    name = "l2pf_search.json" if retime_dir == "retime4" else f"l2pf_search_{retime_dir}.json"
    with open(os.path.join(HERE, name), "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    import sys
    main(*sys.argv[1:2])
