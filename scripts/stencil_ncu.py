"""Launch one generated CUDA stencil kernel a few times, for Nsight Compute to profile (GPU machine).

Why: the benchmark explains a kernel's shortfall from the roofline with
ptxas's registers and spills; Nsight Compute adds what the hardware did
(achieved occupancy, DRAM and L2 throughput, stall reasons).  This script only
builds the kernel of one configuration and runs it (verified, as in the
benchmark), so that ``ncu`` wrapping it sees exactly the tuned kernel:

    ncu --csv -k regex:stencil -c 1 --section SpeedOfLight --section Occupancy \\
        python3 -m scripts.stencil_ncu --stencil hypterm --config tuned.json

``--config`` is ``baseline``, a JSON object, or a results file of
``scripts.bench_stencil_gpu`` (its ``tuned_config`` for the stencil is used).
``scripts/gpu_ncu.sh`` runs it for every stencil of such a results file.
A configuration with kernel fission (``fis`` > 1) launches ``fis`` kernels
(``stencil_kernel_0`` ...) per step: give ncu a ``--launch-count`` of at least
``fis`` to see all of them.
"""

from __future__ import annotations

import argparse
import json
import os
from typing import Any

from scripts.bench_stencil_gpu import _app, _measure


def load_config(text: str, stencil: str) -> dict[str, Any]:
    """The configuration named by ``--config`` (see the module docstring)."""
    from apps.stencil.cuda_gen import cuda_baseline

    if text == "baseline":
        return cuda_baseline()
    if os.path.exists(text):
        with open(text) as fh:
            data = json.load(fh)
        rows = data.get("cuda", []) if isinstance(data, dict) else []
        for row in rows:
            if row.get("stencil") == stencil and isinstance(row.get("tuned_config"), dict):
                return row["tuned_config"]
        raise SystemExit(f"--config {text}: no tuned_config for stencil {stencil!r} in that results file")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"--config: not 'baseline', a file, or a JSON object ({exc})") from exc
    if not isinstance(config, dict):
        raise SystemExit("--config: the JSON must be an object of parameter values")
    return config


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stencil", required=True)
    ap.add_argument("--config", default="baseline")
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    app = _app(stencil=args.stencil, backend="cuda", size=args.size)
    config = {**load_config("baseline", args.stencil), **load_config(args.config, args.stencil)}
    res = _measure(app, config, args.repeats)
    print(json.dumps({"stencil": args.stencil, **{k: v for k, v in res.items() if k != "config"},
                      "config": config}, default=str))
    return 0 if res.get("state") == "OK" else 1


if __name__ == "__main__":
    raise SystemExit(main())
