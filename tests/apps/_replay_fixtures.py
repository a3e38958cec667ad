"""Small recorded-space files written by the replay tests (no shared data needed)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path
from typing import Any

import numpy as np


def shared_space(name: str) -> Path | None:
    """A file of shared/data/spaces (beside the checkout), or None when absent."""
    path = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "spaces" / name
    return path if path.exists() else None


def _write_kt_cache(path: Path, params: dict[str, list[Any]], cache: dict[str, dict[str, Any]], *,
                    gz: bool = True) -> Path:
    """A Kernel Tuner cache file of ``params`` (name -> levels) holding the entries of ``cache``."""
    data = {"device_name": "test", "kernel_name": "k", "problem_size": [1], "objective": "time",
            "tune_params_keys": list(params), "tune_params": params, "cache": cache}
    raw = json.dumps(data).encode()
    path.write_bytes(gzip.compress(raw) if gz else raw)
    return path


def kt_cache(path: Path, *, gz: bool = True) -> Path:
    """A 2x3 Kernel Tuner cache with one failed and one absent configuration."""
    cache = {}
    rows = [(32, 1, 2.0), (32, 2, 1.5), (32, 4, "RuntimeFailedConfig"), (64, 1, 3.0), (64, 2, 0.5)]
    for bx, ty, t in rows:  # (64, 4) is absent from the file
        entry = {"block_size_x": bx, "tile_y": ty, "time": t, "compile_time": 1000.0,
                 "verification_time": 10.0, "benchmark_time": 90.0}
        if not isinstance(t, str):
            entry["times"] = [t * 0.9, t, t * 1.1]
        cache[f"{bx},{ty}"] = entry
    return _write_kt_cache(path, {"block_size_x": [32, 64], "tile_y": [1, 2, 4]}, cache, gz=gz)


def sparse_kt_cache(path: Path, *, n: int = 20, seed: int = 5) -> Path:
    """An n x n Kernel Tuner cache with about half of the grid absent (those fail in grid mode); the valid
    values form one bowl around (7, 3) with uniform noise."""
    rng = np.random.default_rng(seed)
    cache = {}
    for a in range(n):
        for b in range(n):
            if rng.random() < 0.5:
                continue
            cache[f"{a},{b}"] = {"a": a, "b": b, "time": float(1.0 + (a - 7) ** 2 + (b - 3) ** 2 + rng.random())}
    return _write_kt_cache(path, {"a": list(range(n)), "b": list(range(n))}, cache)


def t4(path: Path) -> Path:
    results = []
    for (a, b, v, inval) in [(1, "x", 5.0, "correct"), (2, "x", 4.0, "correct"), (1, "y", None, "compile"),
                             (2, "y", 3.0, "correct")]:
        results.append({"configuration": {"a": a, "b": b},
                        "times": {"compilation": 500.0, "benchmark": 100.0, "validation": 0.0, "framework": 1.0,
                                  "search_algorithm": 0.0, "runtimes": [] if v is None else [v, v]},
                        "invalidity": inval, "correctness": 1, "objectives": ["time"],
                        "measurements": [] if v is None else [{"name": "time", "value": v, "unit": "ms"}]})
    path.write_text(json.dumps({"schema_version": "1.0.0", "results": results}))
    return path


def csv_table(path: Path) -> Path:
    """Parameters x (numeric, unsorted in the file), mode (strings); absent (x=10, mode=b)."""
    path.write_text("x,mode,cost_s,gflops\n"
                    "10,a,2.0,100\n"
                    "2,a,1.0,50\n"
                    "2,b,1.0,\n"
                    "1.5,a,0.5,75\n"
                    "1.5,b,0.5,80\n")
    return path
