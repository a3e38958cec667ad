"""Issue 17, session 26 (one H100, two calls on the same warm machine): j3d7pt's and j3d27pt's records at
--parallelism 4, one record per stencil with the issue's keys.

    python docs/stencil_gpu_results/issue17_par_s26/h100/merge_s26.py

j3d7pt: seeds 1-5 from call 1. j3d27pt: seeds 1-2 from call 1 (stopped there for time) and 3-5 from call 2.
The record's copy bandwidth and baseline are the median over its processes (each measured its own).
"""
import json
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent
PLAN = {"j3d7pt": ["call1/j3d7pt_s1"], "j3d27pt": ["call1/j3d27pt_s1", "call2/j3d27pt_s3"]}


def one_record(folders: list[str]) -> dict:
    """The records of one stencil's processes joined: every search, and the figures over all of them."""
    recs = [json.loads((HERE / f / "cuda_roofline.json").read_text())[0] for f in folders]
    searches = sorted((s for r in recs for s in r["searches"]), key=lambda s: s["seed"])
    pcts = [s["pct_roofline"] or 0.0 for s in searches]
    return {**recs[0], "searches": searches, "median_pct_roofline": statistics.median(pcts),
            "worst_pct_roofline": min(pcts), "best_pct_roofline": max(pcts),
            "baseline_pct_roofline": statistics.median(r["baseline_pct_roofline"] for r in recs),
            "copy_bandwidth_gbs": statistics.median(r["copy_bandwidth_gbs"] for r in recs),
            "processes": folders, "parallelism": 4}


def main() -> None:
    out = [one_record(v) for v in PLAN.values()]
    (HERE / "cuda_roofline.json").write_text(json.dumps(out, indent=1, default=str))
    for r in out:
        print(r["stencil"], [round(s["pct_roofline"], 1) for s in r["searches"]],
              f"median {r['median_pct_roofline']:.1f} worst {r['worst_pct_roofline']:.1f}")


if __name__ == "__main__":
    main()
