"""Sweep the work-group space of many stencil scenarios (Cummins et al., Sections 3.3 and 5).

    python -m scripts.cummins_dataset --database sqlite:///wg_pocl.db --profile pocl --budget 1100 \
        --export docs/cummins_results/pocl
    python -m scripts.cummins_dataset --export-only --database sqlite:///wg_pocl.db --export DIR
    python -m scripts.cummins_dataset --combine docs/cummins_results/pocl docs/cummins_results/nvidia \
        --export apps/workgroup/data          # the shipped extract

Each scenario (device, kernel, dataset size and type) is one run in the
results database (``apps.workgroup.sweep``), so a second invocation resumes
where the first stopped and skips finished scenarios.  ``--budget`` stops
starting new scenarios after that many seconds; the extract is rewritten
after every ``--export-every`` scenarios so an interrupted sweep still leaves
data.  The scenario list is fixed by ``--seed`` (synthetic kernels are drawn
from it) and ``--profile``: ``pocl`` (small grids for the shared CPU) or
``gpu`` (larger grids).  Order: the list is interleaved so that a sweep cut
short still covers every kernel family and size.
"""

from __future__ import annotations

import argparse
import sys
import time
import warnings
from typing import Any

import numpy as np

from apps.workgroup.data import export_database
from apps.workgroup.kernels import StencilKernel, real_world_kernels, synthetic_kernel
from apps.workgroup.sweep import Scenario, sweep_scenario

PROFILES: dict[str, dict[str, Any]] = {"pocl": {"sizes": [(256, 256), (512, 512), (256, 1024)], "synthetic": 6},
            "gpu": {"sizes": [(512, 512), (1024, 1024), (2048, 2048), (1024, 4096)], "synthetic": 8},
            "tiny": {"sizes": [(64, 64)], "synthetic": 1}}


def kernels(seed: int, n_synthetic: int) -> list[StencilKernel]:
    """Real-world kernels (float, a double copy of two) and synthetic ones of both complexities."""
    rng = np.random.default_rng(seed)
    out = real_world_kernels("float")
    out += [k.with_dtype("double") for k in out if k.family in ("gaussian", "he")][:2]
    for i in range(n_synthetic):
        dtype = "double" if i % 3 == 2 else "float"
        out.append(synthetic_kernel(rng, i, complex_=bool(i % 2), dtype=dtype))
    return out


def scenarios(profile: str, seed: int) -> list[Scenario]:
    """Every (kernel, size) of the profile, interleaved by size so a cut-short sweep covers all kernels."""
    p = PROFILES[profile]
    ks = kernels(seed, int(p["synthetic"]))
    return [Scenario(k, r, c) for (r, c) in p["sizes"] for k in ks]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--database", default=None, metavar="URL", nargs="+",
                    help="results database (several with --export-only: one extract of all)")
    ap.add_argument("--profile", choices=sorted(PROFILES), default="pocl")
    ap.add_argument("--grid", choices=("compact", "paper", "pow2"), default=None,
                    help="default: pow2 for the pocl and tiny profiles, compact for gpu")
    ap.add_argument("--platform", help="OpenCL platform name part or index")
    ap.add_argument("--device", help="OpenCL device name part or index")
    ap.add_argument("--seed", type=int, default=19)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--budget", type=float, default=None, metavar="SEC", help="start no scenario after SEC")
    ap.add_argument("--limit", type=int, default=None, help="at most this many scenarios")
    ap.add_argument("--export", metavar="DIR", help="write scenarios.csv.gz / measurements.csv.gz here")
    ap.add_argument("--export-every", type=int, default=10)
    ap.add_argument("--export-only", action="store_true")
    ap.add_argument("--combine", nargs="+", metavar="DIR", help="with --export: one extract of these extracts")
    a = ap.parse_args(argv)
    if a.combine:
        from apps.workgroup.data import combine

        print("combined", combine(a.combine, a.export))
        return 0
    if not a.database:
        ap.error("--database is required (except with --combine)")
    if a.export_only:
        print("exported", export_database(a.database, a.export))
        return 0
    warnings.filterwarnings("ignore", module="pyopencl")
    warnings.filterwarnings("ignore", message=".*retrieved more than once.*")
    from measurement.opencl import OpenCLBackend

    be = OpenCLBackend(a.platform, a.device)
    print(f"device: {be.name} ({be.platform_name}), max work-group {be.max_work_group_size}", flush=True)
    t0 = time.perf_counter()
    grid = a.grid or ("compact" if a.profile == "gpu" else "pow2")
    todo = scenarios(a.profile, a.seed)[:a.limit]
    done = 0
    for i, sc in enumerate(todo):
        if a.budget is not None and time.perf_counter() - t0 > a.budget:
            print(f"budget of {a.budget:.0f} s spent after {done} scenarios", flush=True)
            break
        ts = time.perf_counter()
        try:
            name = sweep_scenario(sc, be, a.database[0], grid=grid, repeats=a.repeats, seed=a.seed)
        except Exception as exc:  # noqa: BLE001 - one broken scenario must not end the sweep: report and go on
            print(f"[{i + 1}/{len(todo)}] {sc.kernel.name} {sc.rows}x{sc.cols}: FAILED {exc!r}", flush=True)
            continue
        done += 1
        print(f"[{i + 1}/{len(todo)}] {name} {time.perf_counter() - ts:.1f} s", flush=True)
        if a.export and done % a.export_every == 0:
            export_database(a.database[0], a.export)
    if a.export:
        print("exported (scenarios, rows):", export_database(a.database[0], a.export), flush=True)
    print(f"total {time.perf_counter() - t0:.0f} s, {done} scenarios", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
