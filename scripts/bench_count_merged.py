"""Exact counting: the join (``count_valid``) beside variable elimination (``count_valid(merge=True)``).

Both run in this one process on the same spaces, a fresh space for every
repeat (no table or cache survives), alternating join and merge so that
machine noise hits both alike.  The spaces: the generated CUDA stencil
spaces of the csTuner stencils at 64^3 (tens of millions of valid
configurations, the counts the CUDA space tests check), and, where
../shared/data is present, the Kernel Tuner T1 definitions (thousands to
hundreds of thousands).  Both counts are printed; they must agree.

Usage: python -m scripts.bench_count_merged [--repeats 3] [--stencils hypterm,rhs4center,j3d7pt]
Prints a markdown table of medians and the join / merge ratio.
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from pathlib import Path

from ensemble import Enum, SearchSpace

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
DEFS = sorted((DATA / "spaces" / "definitions").glob("*.json")) if DATA.is_dir() else []


def _t1_space(path: Path) -> Callable[[], SearchSpace]:
    def make() -> SearchSpace:
        d = json.loads(path.read_text())
        s = SearchSpace()
        for p in d["ConfigurationSpace"]["TuningParameters"]:
            # the definitions write value lists as small Python expressions ("[2**i for i in range(6)]")
            s.add(Enum(p["Name"], list(eval(p["Values"], {"__builtins__": {}, "range": range, "list": list}))))
        for c in d["ConfigurationSpace"]["Conditions"]:
            s.require(c["Expression"])
        return s

    return make


def _cuda_space(name: str, expr: str | None) -> Callable[[], SearchSpace]:
    def make() -> SearchSpace:
        from apps.stencil.cstuner import cstuner_stencil
        from apps.stencil.space import cuda_space

        s = cuda_space(cstuner_stencil(name, 64))
        if expr:
            s.require(expr, name="fixed")
        return s

    return make


def _time(make: Callable[[], SearchSpace], merge: bool, limit: int) -> tuple[int | None, float]:
    s = make()
    t = time.perf_counter()
    n = s.count_valid(limit, merge=merge)
    return n, time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--stencils", default="hypterm,rhs4center,j3d7pt")
    args = ap.parse_args()
    cases: list[tuple[str, Callable[[], SearchSpace], int]] = []
    for name in [n for n in args.stencils.split(",") if n]:
        cases.append((f"CUDA {name} 64^3, not dsmem and not zq", _cuda_space(name, "not dsmem and not zq"), 10**9))
        cases.append((f"CUDA {name} 64^3, whole space", _cuda_space(name, None), 10**9))
    cases += [(f"T1 {p.stem}", _t1_space(p), 10**7) for p in DEFS]
    print(f"# {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, {platform.node()}, "
          f"Python {platform.python_version()}, {args.repeats} repeats (median)")
    print("| space | valid (join) | valid (merge) | join s | merge s | join / merge |")
    print("|---|---:|---:|---:|---:|---:|")
    for label, make, limit in cases:
        join, merge = [], []
        nj = nm = None
        for _ in range(args.repeats):
            nj, tj = _time(make, False, limit)
            nm, tm = _time(make, True, limit)
            join.append(tj)
            merge.append(tm)
        mj, mm = statistics.median(join), statistics.median(merge)
        print(f"| {label} | {nj} | {nm} | {mj:.4f} | {mm:.4f} | {mj / mm:.1f}x |", flush=True)
        if nj != nm:
            raise SystemExit(f"{label}: the counts differ ({nj} against {nm})")


if __name__ == "__main__":
    main()
