"""Issue 17's table of record: the latest H100 5 x 300 run of each stencil, one record each, and its plot.

    python docs/stencil_gpu_results/issue17_record/merge_record.py

Later sources replace earlier ones stencil by stencil. Each record keeps the issue's keys and gains `source` (the
file it came from) and `label` (stencil and session, for the plot).
"""

from __future__ import annotations

import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
SOURCES = [  # (file under docs/stencil_gpu_results, session, stencils taken from it), oldest first
    ("issue17_h100_s18/cuda_roofline.json", "s18", ("helmholtz", "cheby")),
    ("issue17_stage_s22/cuda_roofline.json", "s22", ("hypterm", "addsgd6", "rhs4center", "addsgd4")),
    ("issue17_confirm10_s25/h100/gpu0/j3d7pt_s1/cuda_roofline.json", "s25", ("j3d7pt",)),
    ("issue17_confirm10_s25/h100/gpu0/j3d27pt_s1/cuda_roofline.json", "s25", ("j3d27pt",)),
    ("issue17_par_s26/h100/cuda_roofline.json", "s26", ("j3d7pt", "j3d27pt")),
]
ORDER = ["j3d7pt", "j3d27pt", "helmholtz", "cheby", "hypterm", "addsgd4", "addsgd6", "rhs4center"]
KEYS = ["stencil", "searches", "median_pct_roofline", "worst_pct_roofline", "best_pct_roofline",
        "baseline_pct_roofline", "device", "copy_bandwidth_gbs", "budget"]


def main() -> int:
    sys.path.insert(0, ROOT)
    from scripts.bench_stencil_gpu import plot_records

    base = os.path.join(ROOT, "docs", "stencil_gpu_results")
    found: dict[str, dict] = {}
    for rel, session, names in SOURCES:
        with open(os.path.join(base, rel)) as f:
            recs = json.load(f)
        for name in names:
            # the first record of a stencil in a file is its run of record (a merged file may add a second run)
            r = next(r for r in recs if r["stencil"] == name)
            missing = [k for k in KEYS if k not in r]
            if missing:
                raise SystemExit(f"{rel}: {name} lacks {missing}")
            found[name] = {**r, "source": rel, "label": f"{name} ({session})"}
    out = [found[n] for n in ORDER]
    path = os.path.join(HERE, "cuda_roofline.json")
    with open(path, "w") as f:
        json.dump(out, f, indent=1, default=str)
    bws = [r["copy_bandwidth_gbs"] for r in out]
    plot_records(path, title=f"{out[0]['device']}: median of 5 searches x 300 per stencil, the latest run of each "
                             f"(session in brackets); copy {min(bws):.0f}-{max(bws):.0f} GB/s in its processes")
    for r in out:
        print(f"{r['label']:22s} median {r['median_pct_roofline']:5.1f} worst {r['worst_pct_roofline']:5.1f} "
              f"best {r['best_pct_roofline']:5.1f} baseline {r['baseline_pct_roofline'] or 0:5.1f} "
              f"copy {r['copy_bandwidth_gbs']:.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
