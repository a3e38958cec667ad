"""Benchmark ensemble.space: exact counting and valid sampling on real spaces.

Two measurements, each with its peer run in the same command:

1. Counting / enumerating the valid configurations of the Kernel Tuner T1
   definitions in ../shared/data/spaces/definitions, ours (a fresh
   SearchSpace each repeat, so no cache helps) beside Kernel Tuner 1.5.0's
   ``Searchspace`` construction (python-constraint2 backtracking solver), run
   in its own venv through scripts/_peers.py.  Both counts are printed; they
   must agree.
2. Drawing valid configurations of the SPAPT spaces (up to 1e36 points), ours
   (``SearchSpace.sample``, fresh space, so table building is included) beside
   naive whole-space rejection sampling with the same validity check, capped
   at ``--reject-cap`` draws per kernel.

Usage: python -m scripts.bench_space [--repeats 5] [--samples 1000] [--reject-cap 200000]
Prints markdown tables of medians and ratios (paste them into docs/BENCHMARKS.md).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from ensemble import Enum, SearchSpace

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"
if not DATA.is_dir():
    DATA = Path("/work/shared/data")
DEFS = sorted((DATA / "spaces" / "definitions").glob("*.json"))
SPAPT = DATA / "param_spaces" / "spapt_search_spaces.json"


def _values(text: str) -> list:
    return list(eval(text, {"__builtins__": {}, "range": range, "list": list}))


def kt_space(path: Path) -> SearchSpace:
    d = json.loads(path.read_text())["ConfigurationSpace"]
    s = SearchSpace()
    for p in d["TuningParameters"]:
        s.add(Enum(p["Name"], _values(p["Values"])))
    for c in d["Conditions"]:
        s.require(c["Expression"])
    return s


def spapt_space(d: dict) -> SearchSpace:
    s = SearchSpace()
    for n, vals in d["params"].items():
        s.add(Enum(n, vals))
    for label, c in d["constraints"].items():
        s.require(c, name=label)
    return s


def median_time(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def bench_counting(repeats: int) -> None:
    try:
        from scripts._peers import peer_available, run_peer

        peer = (
            run_peer(
                "kerneltuner",
                Path(__file__).with_name("_peer_kt_space.py"),
                input_json={"files": [str(p) for p in DEFS], "repeats": repeats},
                timeout=1800,
            )
            if peer_available("kerneltuner")
            else {}
        )
    except Exception as exc:  # noqa: BLE001 - report the peer as missing, keep our numbers
        print(f"(Kernel Tuner peer unavailable: {exc})", file=sys.stderr)
        peer = {}
    print(
        "| space | grid | valid (ours) | ours count ms | ours enumerate-to-dicts ms "
        "| Kernel Tuner 1.5.0 ms | KT valid | KT / ours (count) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for path in DEFS:
        t_count, count = median_time(lambda p=path: kt_space(p).count_valid(), repeats)
        t_enum, n_enum = median_time(
            lambda p=path: len(list(kt_space(p).enumerate_valid())), repeats
        )
        assert n_enum == count
        grid = kt_space(path).size
        pk = peer.get(str(path))
        kt_ms = f"{pk['median_s'] * 1e3:.1f}" if pk else "n/a"
        kt_n = pk["count"] if pk else "n/a"
        ratio = f"{pk['median_s'] / t_count:.1f}x" if pk else "n/a"
        print(
            f"| {path.stem} | {grid} | {count} | {t_count * 1e3:.1f} | {t_enum * 1e3:.1f} "
            f"| {kt_ms} | {kt_n} | {ratio} |"
        )


def bench_sampling(samples: int, reject_cap: int, seed: int) -> None:
    spaces = json.loads(SPAPT.read_text())
    print()
    print(
        f"| SPAPT kernel | log10 grid | valid fraction | ours: {samples} valid draws ms "
        f"| ours us/draw | rejection: valid found / draws | rejection us/valid "
        f"| rejection / ours |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, d in spaces.items():
        rng = np.random.default_rng(seed)
        t0 = time.perf_counter()
        s = spapt_space(d)
        got = s.sample(rng, samples)
        t_ours = time.perf_counter() - t0
        assert all(s.is_valid(c) for c in got)
        frac = s.count_valid() / s.size
        # naive rejection: uniform over the whole grid, keep valid ones
        found, draws = 0, 0
        params = s.params
        t0 = time.perf_counter()
        while found < samples and draws < reject_cap:
            draws += 1
            c = {p.name: p.sample(rng) for p in params}
            found += s.is_valid(c)
        t_rej = time.perf_counter() - t0
        per_ours = t_ours / samples
        per_rej = t_rej / found if found else math.inf
        print(
            f"| {name} | {math.log10(s.size):.1f} | {frac:.2e} | {t_ours * 1e3:.1f} "
            f"| {per_ours * 1e6:.1f} | {found} / {draws} "
            f"| {per_rej * 1e6:.0f} | {per_rej / per_ours:.0f}x |"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--samples", type=int, default=1000)
    ap.add_argument("--reject-cap", type=int, default=200_000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    print(
        f"machine: {platform.node()} {platform.machine()} Python {platform.python_version()}, "
        f"numpy {np.__version__}"
    )
    bench_counting(args.repeats)
    bench_sampling(args.samples, args.reject_cap, args.seed)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
