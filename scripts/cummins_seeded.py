"""End to end: the work-group predictor seeds ``apps.stencil``; first trial's time against the tuned best.

    python -m scripts.cummins_seeded --pattern star --radius 1 --size 128 --test-limit 30 \
        --database sqlite:///seeded.db --out docs/cummins_results/seeded_pocl.json

Runs ``apps.workgroup.seeded.SeededStencilApp`` (``--seed-from-model``) through
``ensemble.tune`` with the default ensemble, then reads the run back: the
first trial is the predicted configuration, the best is what tuning found
within ``--test-limit`` unique evaluations; Garvey's baseline (32x4) is
measured too as the app's second seed.  Prints and writes one JSON object.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
import warnings
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pattern", default="star")
    ap.add_argument("--radius", type=int, default=1)
    ap.add_argument("--size", type=int, default=128)
    ap.add_argument("--dtype", default="float32")
    ap.add_argument("--method", default="speedup")
    ap.add_argument("--technique", default="default")
    ap.add_argument("--test-limit", type=int, default=30)
    ap.add_argument("--database", required=True)
    ap.add_argument("--run-name", default=None)
    ap.add_argument("--platform", default=None)
    ap.add_argument("--device", default=None)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", default=None)
    ap.add_argument("--data", nargs="+", default=None, help="train on these extracts (default: shipped)")
    a = ap.parse_args(argv)
    warnings.filterwarnings("ignore", message=".*retrieved more than once.*")
    from apps.workgroup.seeded import SeededStencilApp
    from ensemble.storage import Storage
    from ensemble.tune import tune

    app = SeededStencilApp(pattern=a.pattern, dims=2, radius=a.radius, size=a.size, dtype=a.dtype,
                           seed_from_model=a.method, seed_model="J48", platform=a.platform, device=a.device,
                           backend="opencl", repeats=5, warmup=1, seed_data=a.data)
    seeds = app.seed_configurations()
    pred = app.prediction
    name = a.run_name or f"seeded:{a.pattern}{a.radius}:{a.size}:{a.method}:{int(time.time())}"
    t0 = time.perf_counter()
    res = tune(app, database=a.database, run_name=name, technique=a.technique, test_limit=a.test_limit,
               seed=a.seed)
    wall = time.perf_counter() - t0
    with Storage(a.database) as st:
        run = st.get_run(name)
        assert run is not None, name
        trials = [t for t in st.trials(run.id) if not t.duplicate]
    trials.sort(key=lambda t: t.request_id)
    by_config = {json.dumps(t.config, sort_keys=True): t for t in trials}

    def time_of(c: dict) -> float | None:
        t = by_config.get(json.dumps(c, sort_keys=True))
        return None if t is None or t.state != "OK" else t.metrics.get("time")

    ok = [t for t in trials if t.state == "OK"]
    best = min(ok, key=lambda t: t.metrics["time"]) if ok else None
    first_t = time_of(seeds[0])
    out = {"device": app.runner().backend.name, "stencil": f"{a.pattern} r{a.radius} 2-D, size {a.size}",
           "method": pred.method, "predicted_wg": {"wgy": pred.size[0], "wgx": pred.size[1]}, "note": pred.note,
           "first_config": seeds[0], "first_time_s": first_t,
           "baseline_32x4_time_s": time_of(seeds[1]) if len(seeds) > 1 else None,
           "best_time_s": best.metrics["time"] if best else None, "best_config": best.config if best else None,
           "best_found_at_trial": (trials.index(best) + 1) if best else None,
           "first_over_best": (first_t / best.metrics["time"]) if (best and first_t) else None,
           "unique_evaluations": len(trials), "technique": a.technique, "run": name, "tune_wall_s": wall,
           "tune_best_value": res.best_value}
    text = json.dumps(out, indent=1, default=str)
    print(text)
    if a.out:
        Path(a.out).parent.mkdir(parents=True, exist_ok=True)
        Path(a.out).write_text(text + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
