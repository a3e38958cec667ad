"""The random forest's training data and model file (Garvey & Abdelrahman 2018, Sec. 6.1, 7.2).

Measure, on the OpenCL device (each heuristic with each loading technique:
global, global + vectorisation, local, image)::

    python -m scripts.garvey_dataset measure --size 128 --benchmarks 12 --out data.json

(the same measurement as ``scripts.bench_garvey measure`` restricted to the
heuristics), then write the model file the ``garvey`` technique loads::

    python -m scripts.garvey_dataset model data.json --platform "NVIDIA H100 OpenCL" \\
        --out techniques/garvey/data/loading_model.json

``model`` also prints the leave-one-out accuracy of each heuristic's model.

The test fixture ``tests/techniques/data/garvey_pocl_fixture.json`` (a cheap
stand-in for the heuristics: per loading, the best of two fixed
configurations) was measured on PoCL with::

    python -m scripts.garvey_dataset fixture --size 16 --names box1d_r5_z,box2d_r1_z,... --out FILE
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any


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
    fx = sub.add_parser("fixture", help="per loading, the best of two fixed configurations (a test fixture)")
    fx.add_argument("--names", required=True)
    fx.add_argument("--size", type=int, default=16)
    fx.add_argument("--out", required=True)
    a, extra = ap.parse_known_args(argv)
    if extra and a.cmd != "measure":
        ap.error(f"unrecognized arguments: {' '.join(extra)}")
    if a.cmd == "fixture":
        return fixture(a)
    from scripts.bench_garvey import HEURISTICS, rows_of
    from scripts.bench_garvey import main as bench_main

    if a.cmd == "measure":
        return bench_main(["measure", "--strategies", ",".join(HEURISTICS), *extra, *a.rest])
    from techniques.garvey.predictor import LoadingPredictor, leave_one_out

    results = [r for p in a.results for r in json.loads(Path(p).read_text()) if not r.get("incomplete")]
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


def fixture(a: argparse.Namespace) -> int:
    import math

    from apps.stencil.garvey_suite import garvey_benchmark
    from apps.stencil.opencl_gen import opencl_baseline
    from apps.stencil.runner import OpenCLStencilRunner
    from measurement.opencl import OpenCLBackend

    be = OpenCLBackend()
    shapes = [{"wgx": 16, "wgy": 4, "wgz": 1}, {"wgx": 8, "wgy": 2, "wgz": 2, "cmz": 2}]
    loads: dict[str, dict[str, Any]] = {"global": {"mem": "global"}, "vec": {"mem": "global", "bmx": 4, "vx": 4, "wgx": 4},
             "local": {"mem": "local"}, "image": {"mem": "image"}}
    rows = []
    for b in [garvey_benchmark(n) for n in a.names.split(",")]:
        r = OpenCLStencilRunner(b.stencil(a.size), be, limits=False, image_layout="2d", warmup=1, repeats=3,
                                statistic="mean")
        times = {}
        for ld, fix in loads.items():
            got = [r({**opencl_baseline(), **sh, **fix}) for sh in shapes]
            times[ld] = min((x.time for x in got if x.state == "OK" and x.time), default=math.inf)
        rows.append({"name": b.name, "features": b.features(), "times": {"fixture": times}})
        print(b.name, times, flush=True)
    note = (f"{be.device.name}, {a.size}^3; per loading the best of two fixed work-group shapes (16x4x1 and 8x2x2 "
            "with CZ=2; vec: BX=VX=4); mean of 3 after 1 warm-up")
    Path(a.out).write_text(json.dumps({"note": note, "rows": rows}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
