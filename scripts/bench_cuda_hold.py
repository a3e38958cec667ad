"""How much of a CUDA event time is the host's launch overhead: the same kernels timed with and without the hold.

Why: ``CudaBackend`` times a launch with events recorded around it. On an
idle stream the GPU takes the start time before the host has finished
enqueuing the launch, so the interval includes part of the host's launch
overhead (``measurement.cuda_hold`` explains it and the evidence). With
``CudaBackend(hold=True)`` the launches are enqueued behind a spinning
kernel and the events time the GPU only. This script measures the
difference side by side, in one process on one GPU: for the baseline and
the best recorded configurations of a stencil (as ``bench_stencil_retime``
pools them), each round measures the copy bandwidth and every kernel once
without and once with the hold (the order of the two alternates from round
to round, the kernels' order rotates), and reports per kernel the median
time and % of the roofline both ways and the difference in microseconds.

    python3 -m scripts.bench_cuda_hold --stencil j3d7pt --from 'docs/stencil_gpu_results/**/*.json' \\
        --top 6 --rounds 7 --out $OUT
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import time
from typing import Any

from scripts.bench_stencil_gpu import _app, _peaks
from scripts.bench_stencil_retime import recorded_configs


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stencil", default="j3d7pt")
    ap.add_argument("--from", dest="sources", action="append", default=[],
                    help="glob of result JSON files whose best configurations are timed too (repeatable)")
    ap.add_argument("--top", type=int, default=6, help="how many recorded configurations beside the baseline")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args(argv)
    if args.top < 0 or args.rounds < 1 or args.repeats < 1:
        ap.error(f"--top must be >= 0, --rounds and --repeats >= 1; got {args.top}, {args.rounds}, {args.repeats}")
    from apps.stencil.cuda_gen import cuda_baseline, cuda_is_legal
    from measurement.cuda import CudaBackend

    app = _app(stencil=args.stencil, backend="cuda", size=args.size)
    be = CudaBackend(0)
    app.device_backend = be
    st = app.stencil
    base = cuda_baseline()
    paths = sorted({p for g in args.sources for p in glob.glob(g, recursive=True)})
    ranked = sorted(recorded_configs(paths, args.stencil).values(), key=lambda pc: -pc[0])
    configs = [base]
    for _, cfg in ranked:
        full = {**base, **cfg}
        if len(configs) > args.top:
            break
        if cuda_is_legal(st, full) and full not in configs:
            configs.append(full)
    runner = app.runner()
    runner.timing.update(repeats=args.repeats, warmup=2)
    builds = [runner.build(c) for c in configs]
    peak = _peaks(be)["fp64_peak"]
    nbytes, flops = st.compulsory_bytes(), st.flops()
    times: dict[bool, list[list[float]]] = {m: [[] for _ in builds] for m in (False, True)}
    fracs: dict[bool, list[list[float]]] = {m: [[] for _ in builds] for m in (False, True)}
    copies: dict[bool, list[float]] = {False: [], True: []}
    timeouts = 0
    t0 = time.time()
    print(f"device {be.name}: {args.stencil}, {len(configs)} kernels, {args.rounds} rounds", flush=True)
    for r in range(args.rounds):
        modes = (False, True) if r % 2 == 0 else (True, False)
        bw = {}
        for m in modes:
            be.hold = m
            bw[m] = be.copy_bandwidth(1 << 31)
            copies[m].append(bw[m])
        order = [(r + j) % len(builds) for j in range(len(builds))]
        be.hold = modes[0]
        runner.measure(builds[order[0]])  # settle after the copies: untimed
        for i in order:
            for m in modes:
                be.hold = m
                res = runner.measure(builds[i])
                timeouts += int(res.metrics.get("hold_timeouts", 0))
                if res.state == "OK" and res.time:
                    times[m][i].append(float(res.time))
                    fracs[m][i].append(max(nbytes / bw[m], flops / peak) / float(res.time))
    be.hold = False
    rows: list[dict[str, Any]] = []
    for i, cfg in enumerate(configs):
        if not (times[False][i] and times[True][i]):
            rows.append({"config": cfg, "state": "no OK measurement in one of the modes"})
            continue
        plain, held = statistics.median(times[False][i]), statistics.median(times[True][i])
        rows.append({"config": cfg, "plain_ms": plain * 1e3, "held_ms": held * 1e3,
                     "difference_us": (plain - held) * 1e6,
                     "plain_pct_roofline": 100 * statistics.median(fracs[False][i]),
                     "held_pct_roofline": 100 * statistics.median(fracs[True][i])})
        short = {k: v for k, v in cfg.items() if v != base.get(k)} or "baseline"
        print(f"{plain * 1e3:8.4f} ms {held * 1e3:8.4f} ms  {(plain - held) * 1e6:6.1f} us  "
              f"{rows[-1]['plain_pct_roofline']:5.1f} -> {rows[-1]['held_pct_roofline']:5.1f} %  {short}", flush=True)
    cp, ch = statistics.median(copies[False]), statistics.median(copies[True])
    print(f"copy {cp / 1e9:.0f} GB/s plain, {ch / 1e9:.0f} GB/s held; hold timeouts {timeouts}; "
          f"{time.time() - t0:.0f} s", flush=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": be.name, "stencil": st.name,
              "rounds": args.rounds, "repeats": args.repeats, "copy_gbs_plain": cp / 1e9, "copy_gbs_held": ch / 1e9,
              "hold_timeouts": timeouts, "rows": rows}
    with open(os.path.join(args.out, f"cuda_hold_{st.name}.json"), "w") as f:
        json.dump(report, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
