"""The random forest's training data and model file (Garvey & Abdelrahman 2018, Sec. 6.1, 7.2).

Measure, on the OpenCL device (each heuristic with each loading technique:
global, global + vectorisation, local, image)::

    python -m scripts.garvey_dataset measure --size 128 --benchmarks 12 --out data.json

(the same measurement as ``scripts.bench_garvey measure`` restricted to the
heuristics), then write the model file the ``garvey`` technique loads::

    python -m scripts.garvey_dataset model data.json --platform "NVIDIA H100 OpenCL" \\
        --out techniques/garvey/data/loading_model.json

``model`` also prints the leave-one-out accuracy of each heuristic's model.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("measure", help="run bench_garvey's measurement with the heuristics only")
    m.add_argument("rest", nargs=argparse.REMAINDER)
    mo = sub.add_parser("model", help="write the model file from measured results")
    mo.add_argument("results", nargs="+", help="JSON files written by 'measure' / bench_garvey")
    mo.add_argument("--platform", required=True, help="what the rows were measured on (stored in the file)")
    mo.add_argument("--out", required=True)
    mo.add_argument("--seed", type=int, default=1)
    a = ap.parse_args(argv)
    from scripts.bench_garvey import HEURISTICS, rows_of
    from scripts.bench_garvey import main as bench_main

    if a.cmd == "measure":
        return bench_main(["measure", "--strategies", ",".join(HEURISTICS), *a.rest])
    from techniques.garvey.predictor import LoadingPredictor, leave_one_out

    results = [r for p in a.results for r in json.loads(Path(p).read_text())]
    rows = [r for r in rows_of(results) if r["times"]]
    for h in HEURISTICS:
        if sum(1 for r in rows if h in r["times"]) >= 2:
            loo = leave_one_out([r for r in rows if h in r["times"]], h, seed=a.seed)
            print(f"{h}: {loo['kernels']} kernels, leave-one-out absolute accuracy {loo['absolute_accuracy']:.2f}, "
                  f"penalty-weighted {loo['penalty_weighted_accuracy']:.2f}")
    LoadingPredictor.save(a.out, rows, platform=a.platform, seed=a.seed,
                          note=f"{len(rows)} kernels from {', '.join(Path(p).name for p in a.results)}")
    print(f"wrote {a.out} ({len(rows)} kernels)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
