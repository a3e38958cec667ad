"""A local proxy for NVIDIA OpenCL build time (no GPU): clang 15, -O3, nvptx64.

NVIDIA's OpenCL compiler is LLVM-based (NVVM); with the unroll thresholds
raised (EXTRA="-mllvm -unroll-threshold=200000 -mllvm -pragma-unroll-threshold=200000")
clang unrolls every constant-trip loop without a pragma, as NVIDIA's did.
For Rand's first N configurations of a benchmark it prints, per generator
variant (``large_loops``: ``rolled``, the generator now; ``compiler``, the
generator before 2026-11-25 for loops above 32 points and before 2026-11-26
for the load bound), the clang time and the number of LLVM IR instructions.

    EXTRA="..." python docs/garvey_results/h100_s14/clang_proxy.py box1d_r5_z 64 30 rolled,compiler
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from apps.stencil.garvey_suite import garvey_benchmark
from apps.stencil.opencl_gen import generate_opencl
from apps.stencil.space import opencl_space
from ensemble.registry import create_technique

EXTRA = os.environ.get("EXTRA", "").split()


def build(src: str) -> tuple[float, int]:
    """clang's wall time and IR instruction count (-1 when it fails) for one kernel source."""
    with tempfile.NamedTemporaryFile("w", suffix=".cl", delete=False) as f:
        f.write(src)
    t0 = time.perf_counter()
    r = subprocess.run(["clang-15", "-x", "cl", "-cl-std=CL1.2", "-Xclang", "-finclude-default-header",
                        "-target", "nvptx64-nvidia-nvcl", "-O3", *EXTRA, "-S", "-emit-llvm", "-o", "-", f.name],
                       capture_output=True, text=True, timeout=300, check=False)
    dt = time.perf_counter() - t0
    os.unlink(f.name)
    if r.returncode:
        print(r.stderr[:300])
        return dt, -1
    return dt, sum(1 for line in r.stdout.splitlines() if line.startswith("  "))


def main() -> None:
    name, size, n, variants = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4].split(",")
    st = garvey_benchmark(name).stencil(size)
    t = create_technique("GarveyRand", seed=0, samples=n)
    t.bind(opencl_space(st), budget=None, rng=np.random.default_rng(0))
    configs = t.propose(n)
    for v in variants:
        rows = []
        for c in configs:
            k = generate_opencl(st, c, limits=False, image_layout="2d", large_loops=v)
            pts = c["bmx"] * c["cmx"] * c["cmy"] * c["cmz"]
            dt, ins = build(k.source)
            rows.append((pts, dt, ins, len(k.source)))
        a = np.array(rows, float)
        print(f"{name} {v}: n={len(rows)} build mean {a[:, 1].mean():.3f} s max {a[:, 1].max():.2f} s, "
              f"IR instr mean {a[:, 2].mean():.0f} max {a[:, 2].max():.0f}, src chars {a[:, 3].mean():.0f}")
        for label, part in (("pts>32", a[a[:, 0] > 32]), ("pts<=32", a[a[:, 0] <= 32])):
            if len(part):
                print(f"   {label}: n={len(part)} mean {part[:, 1].mean():.3f}s IR {part[:, 2].mean():.0f}")


if __name__ == "__main__":
    main()
