"""Re-time the kernels earlier searches picked, all in one process (GPU machine).

Why: a search's figure for its best kernel comes from its own process and its
own copy measurement; kernels found in different processes (different
searches, days, cards) cannot be ranked from their recorded figures. Issue 17
missed j3d7pt's 95 % by half a point in session 18, and the recorded figures
of its picks ranged from 91 to 96.7 %. This script pools the configurations recorded for
one stencil in result JSON files (each search's ``tuned_config`` and its
``--confirm`` candidates), keeps the ``--top`` by recorded figure, and
re-times them with ``bench_stencil_gpu.confirm_best`` (each round: a fresh
copy, one untimed settle launch, every candidate in rotated order) in two
independent passes, so the ranking's repeatability is seen, not assumed.
It answers: is the gap the kernels (none of them re-times at 95 %) or the
searches' choice among them (some do, and the searches do not pick them)?

    python3 -m scripts.bench_stencil_retime --stencil j3d7pt \
        --from 'docs/stencil_gpu_results/**/*.json' --top 24 --rounds 7 --out $OUT
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import time
from collections.abc import Iterator
from typing import Any

from scripts.bench_stencil_gpu import _app, _peaks, confirm_best


def _loaded(paths: list[str]) -> Iterator[Any]:
    """The parsed content of each JSON file in ``paths``; unreadable or non-JSON files are skipped (a glob over a
    results folder also matches files of other formats and half-written ones)."""
    for p in paths:
        try:
            with open(p) as f:
                yield json.load(f)
        except (OSError, ValueError):
            continue


def recorded_configs(paths: list[str], stencil: str) -> dict[str, tuple[float, dict[str, Any]]]:
    """Each distinct configuration recorded for ``stencil``, with the highest % of roofline recorded for it."""

    def walk(o: Any) -> Iterator[tuple[float, dict[str, Any]]]:
        if isinstance(o, dict):
            if o.get("stencil") == stencil and isinstance(o.get("tuned_config"), dict):
                yield 100.0 * float(o.get("tuned_roof_frac") or 0.0), o["tuned_config"]
            if o.get("stencil") == stencil and isinstance(o.get("confirm"), dict):
                for c in o["confirm"].get("candidates", []):
                    yield float(c.get("median_pct_roofline") or 0.0), c["config"]
            for v in o.values():
                yield from walk(v)
        elif isinstance(o, list):
            for v in o:
                yield from walk(v)

    out: dict[str, tuple[float, dict[str, Any]]] = {}
    for data in _loaded(paths):
        for pct, cfg in walk(data):
            key = json.dumps(cfg, sort_keys=True)
            if key not in out or pct > out[key][0]:
                out[key] = (pct, cfg)
    return out


def picked_configs(paths: list[str], stencil: str) -> list[tuple[float, dict[str, Any]]]:
    """Each search's pick (``tuned_config``) for ``stencil`` in ``bench_stencil_gpu`` result files, in file order."""
    out: list[tuple[float, dict[str, Any]]] = []
    for data in _loaded(paths):
        for r in data.get("cuda", []) if isinstance(data, dict) else []:
            if r.get("stencil") == stencil and isinstance(r.get("tuned_config"), dict):
                out.append((100.0 * float(r.get("tuned_roof_frac") or 0.0), r["tuned_config"]))
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stencil", default="j3d7pt")
    ap.add_argument("--from", dest="sources", action="append", required=True,
                    help="glob of result JSON files (repeatable; ** recurses)")
    ap.add_argument("--top", type=int, default=24, help="how many configurations, by recorded figure")
    ap.add_argument("--always", action="append", default=[],
                    help="glob of result JSON files whose searches' picks are re-timed whatever their recorded "
                         "figure (repeatable): to set a new run's picks beside the best recorded kernels")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--parallelism", type=int, default=14, help="candidates compiled at once")
    ap.add_argument("--hold", action="store_true",
                    help="time CUDA launches behind a hold, without the host's launch overhead (measurement/cuda_hold.py)")
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    args = ap.parse_args(argv)
    if args.top < 0 or args.rounds < 1 or args.repeats < 1 or args.parallelism < 1:
        ap.error(f"--top must be >= 0 and --rounds, --repeats, --parallelism >= 1; got {args.top}, {args.rounds}, "
                 f"{args.repeats}, {args.parallelism} (defaults 24, 7, 10, 14)")
    paths = sorted({p for g in args.sources for p in glob.glob(g, recursive=True)})
    found = recorded_configs(paths, args.stencil)
    picks = picked_configs(sorted({p for g in args.always for p in glob.glob(g, recursive=True)}), args.stencil)
    if not (found and args.top) and not picks:
        ap.error(f"nothing to re-time: no configuration of {args.stencil!r} recorded in the {len(paths)} file(s) "
                 f"that --from matched{'' if args.top else ' (or --top 0)'}, and none from --always; quote the "
                 f"globs so that the shell does not expand them, and check the stencil name")
    from apps.stencil.cuda_gen import cuda_baseline, cuda_is_legal
    from measurement.cuda import CudaBackend

    app = _app(stencil=args.stencil, backend="cuda", size=args.size)
    be = CudaBackend(0, hold=args.hold)
    app.device_backend = be
    st = app.stencil
    base = cuda_baseline()
    ranked = sorted(found.values(), key=lambda pc: -pc[0]) if args.top else []
    configs: list[dict[str, Any]] = []
    recorded: list[float] = []
    for i, (pct, cfg) in enumerate(picks + ranked):
        full = {**base, **cfg}
        if cuda_is_legal(st, full) and full not in configs:
            configs.append(full)
            recorded.append(pct)
        if i >= len(picks) and len(configs) >= args.top + len(picks):
            break
    peak = _peaks(be)["fp64_peak"]
    print(f"device {be.name}: {len(found)} recorded configurations of {args.stencil} in {len(paths)} files; "
          f"re-timing {len(configs)}", flush=True)
    passes = []
    for p in range(2):
        order = configs if p == 0 else configs[::-1]
        t0 = time.time()
        res = confirm_best(app, be, st, order, args.rounds, args.repeats, peak, args.parallelism)
        meds = {json.dumps(c["config"], sort_keys=True): c["median_pct_roofline"] for c in res["candidates"]}
        passes.append({"pick": res["config"], "pick_pct": 100.0 * (res["roof_frac"] or 0.0),
                       "copy_gbs": res["copy_gbs"], "seconds": time.time() - t0, "medians": meds})
        print(f"pass {p + 1}: pick {100.0 * (res['roof_frac'] or 0.0):.1f} % of the roofline "
              f"(copy {res['copy_gbs']:.0f} GB/s), {time.time() - t0:.0f} s", flush=True)
    rows = []
    for cfg, pct in zip(configs, recorded):
        key = json.dumps(cfg, sort_keys=True)
        rows.append({"config": cfg, "recorded_pct": pct, "pass1_pct": passes[0]["medians"].get(key),
                     "pass2_pct": passes[1]["medians"].get(key)})
    rows.sort(key=lambda r: -((r["pass1_pct"] or 0) + (r["pass2_pct"] or 0)))
    for r in rows:
        short = {k: v for k, v in r["config"].items() if v != base.get(k)}
        print(f"{r['recorded_pct']:6.1f} {r['pass1_pct'] or 0:6.1f} {r['pass2_pct'] or 0:6.1f}  {short}", flush=True)
    report = {"date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()), "device": be.name, "hold": be.hold,
              "stencil": st.name, "rounds": args.rounds, "repeats": args.repeats, "sources": paths,
              "passes": [{k: v for k, v in p.items() if k != "medians"} for p in passes], "rows": rows}
    with open(os.path.join(args.out, f"retime_{st.name}.json"), "w") as f:
        json.dump(report, f, indent=1, default=str)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
