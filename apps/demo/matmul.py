"""Blocked (tiled) matrix multiply in NumPy: block sizes really change the time.

Why this app: the README demo must run a real tuning run on any machine,
without a GPU or OpenCL. C = A @ B computed tile by tile has the same knobs as
a GPU kernel's work-group tiling: too small tiles pay Python/call overhead per
tile, too large ones lose cache locality, and the loop order decides which
operand stays hot. The result is checked against NumPy's own product.

Run it: ``python -m apps.demo.matmul --test-limit 40 --report out/demo``.
"""

from __future__ import annotations

import argparse
from typing import Any

import numpy as np

from ensemble import Enum, PowerOfTwo, Result, SearchSpace
from ensemble.app import TunerApp
from measurement.timing import repeat

__all__ = ["BlockedMatmul", "blocked_matmul"]


def blocked_matmul(a: np.ndarray, b: np.ndarray, bi: int, bj: int, bk: int, order: str) -> np.ndarray:
    """C = a @ b, accumulated over (bi x bk) @ (bk x bj) tiles in loop ``order``."""
    n, m = a.shape[0], b.shape[1]
    kk = a.shape[1]
    c = np.zeros((n, m), dtype=a.dtype)
    ranges = {"i": range(0, n, bi), "j": range(0, m, bj), "k": range(0, kk, bk)}
    x, y, z = order[0], order[1], order[2]  # a loop order such as "ikj"
    for p in ranges[x]:
        for q in ranges[y]:
            for r in ranges[z]:
                idx = {x: p, y: q, z: r}
                i, j, k = idx["i"], idx["j"], idx["k"]
                c[i:i + bi, j:j + bj] += a[i:i + bi, k:k + bk] @ b[k:k + bk, j:j + bj]
    return c


class BlockedMatmul(TunerApp):
    """Tune the tile sizes and loop order of a blocked NumPy matrix multiply."""

    @classmethod
    def add_arguments(cls, parser: argparse.ArgumentParser) -> None:
        parser.add_argument("--size", type=int, default=256, help="matrix size n (n x n), default 256")
        parser.add_argument("--repeats", type=int, default=3, help="timed repeats per trial (min is kept)")

    def __init__(self, args: argparse.Namespace | None = None) -> None:
        super().__init__(args)
        n = int(getattr(self.args, "size", 256) or 256)
        self.repeats = int(getattr(self.args, "repeats", 3) or 3)
        rng = np.random.default_rng(12345)
        self.a = rng.standard_normal((n, n), dtype=np.float32)
        self.b = rng.standard_normal((n, n), dtype=np.float32)
        self.reference = self.a @ self.b
        self.n = n

    def space(self) -> SearchSpace:
        top = 1 << (self.n.bit_length() - 1)
        s = SearchSpace()
        s.add(PowerOfTwo("bi", 8, top), PowerOfTwo("bj", 8, top), PowerOfTwo("bk", 8, top),
              Enum("order", ["ijk", "ikj", "jik", "jki", "kij", "kji"]))
        s.require("bi * bj * bk >= 4096")  # skip tiles so small that only call overhead is measured
        return s

    def seed_configurations(self) -> list[dict[str, Any]]:
        return [{"bi": 64, "bj": 64, "bk": 64, "order": "ijk"}]

    def run(self, config: dict[str, Any], limit: float | None) -> Result:
        args = (self.a, self.b, config["bi"], config["bj"], config["bk"], config["order"])
        c = blocked_matmul(*args)
        if not np.allclose(c, self.reference, rtol=1e-3, atol=1e-2):
            return Result(state="INVALID", reason="product differs from a @ b")

        def once() -> None:
            blocked_matmul(*args)

        times = repeat(once, warmup=0, repeats=self.repeats)
        return Result(time=min(times), times=times)


if __name__ == "__main__":
    raise SystemExit(BlockedMatmul.main())
