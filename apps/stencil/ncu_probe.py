"""Build and launch one CUDA stencil configuration, for Nsight Compute to profile.

Why a separate program: Nsight Compute replays a kernel once per metric pass
and must own the process that launches it, while the tuner keeps its own
CUDA context.  ``StencilApp --metrics ncu`` runs this module under ``ncu``
for each trial (``measurement.cuda.ncu_profile``) and stores the metrics in
the trial's ``Result.metrics``, as csTuner's performance dataset holds them
(Sun et al., CLUSTER 2021, Section IV-D).

    ncu --csv --metrics ... python -m apps.stencil.ncu_probe --stencil j3d7pt --size 256 --config '{...}'
"""

from __future__ import annotations

import argparse
import json
import sys


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stencil", required=True)
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--config", required=True, help="the configuration as a JSON object")
    ap.add_argument("--device", default=None)
    args = ap.parse_args(argv)
    from apps.stencil.app import StencilApp

    ns = argparse.Namespace(stencil=args.stencil, size=args.size, backend="cuda", device=args.device,
                            repeats=1, warmup=1, discard_first=0, statistic="median", verify_sample=1000)
    app = StencilApp(ns)
    res = app.runner()(json.loads(args.config))
    print(json.dumps({"state": res.state, "time": res.time, "reason": res.reason}))
    return 0 if res.state == "OK" else 1


if __name__ == "__main__":
    sys.exit(main())
