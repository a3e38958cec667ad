"""Shared helpers of the driver/app/CLI tests: a tiny random technique and small apps.

The random proposal goes through the real Technique interface so the tests do
not depend on the techniques package (which has its own suite).
"""

from __future__ import annotations

import os
from typing import Any

from ensemble import Integer, Result, SearchSpace
from ensemble.app import TunerApp
from ensemble.technique import Technique, Trial


class TinyRandom(Technique):
    """Uniform valid samples; repeats allowed (so duplicates happen)."""

    name = "TinyRandom"

    def __init__(self, *, seed: int | None = None, stop_after_proposals: int | None = None) -> None:
        super().__init__(seed=seed)
        self.observed: list[Trial] = []
        self.foreign: list[Trial] = []
        self.restored: list[Trial] = []
        self.proposals = 0
        self.stop_after_proposals = stop_after_proposals

    def propose(self, n: int) -> list[dict[str, Any]]:
        space = self._need_space()
        if self.done:
            return []
        if self.stop_after_proposals is not None:
            n = min(n, self.stop_after_proposals - self.proposals)
        self.proposals += n
        return space.sample(self.rng, n)

    def observe(self, trial: Trial) -> None:
        self.observed.append(trial)

    def observe_foreign(self, trial: Trial) -> None:
        self.foreign.append(trial)

    def restore(self, trials: Any) -> None:
        self.restored.extend(trials)

    @property
    def done(self) -> bool:
        return self.stop_after_proposals is not None and self.proposals >= self.stop_after_proposals


def small_space(hi: int = 20) -> SearchSpace:
    s = SearchSpace()
    s.add(Integer("x", 0, hi), Integer("y", 0, hi))
    return s


class QuadApp(TunerApp):
    """A fast objective: (x-7)^2 + (y-3)^2 + 1; logs each measured config when asked."""

    log_path: str | None = None

    def __init__(self, args: Any = None, hi: int = 20) -> None:
        super().__init__(args)
        self.hi = hi
        self.log_path = os.environ.get("ENSEMBLE_TEST_MEASURE_LOG")
        self.calls = 0

    def space(self) -> SearchSpace:
        return small_space(self.hi)

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        self.calls += 1
        if self.log_path:
            with open(self.log_path, "a", encoding="utf-8") as fh:
                fh.write(f"{config['x']},{config['y']}\n")
        return Result(time=float((config["x"] - 7) ** 2 + (config["y"] - 3) ** 2 + 1))


class BigQuadApp(QuadApp):
    """Same objective over a 1001 x 1001 grid (room for thousands of unique trials)."""

    def __init__(self, args: Any = None) -> None:
        super().__init__(args, hi=1000)


class Scripted(Technique):
    """Proposes a fixed list of configurations, one per call (or n with ``batched``), then is done."""

    name = "Scripted"

    def __init__(self, script: list[dict[str, Any]], *, batched: bool = False, seed: int | None = None) -> None:
        super().__init__(seed=seed)
        self.script = list(script)
        self.batched = batched
        self.observed: list[Trial] = []
        self.foreign: list[Trial] = []

    def propose(self, n: int) -> list[dict[str, Any]]:
        k = n if self.batched else 1
        out, self.script = self.script[:k], self.script[k:]
        return out

    def observe(self, trial: Trial) -> None:
        self.observed.append(trial)

    def observe_foreign(self, trial: Trial) -> None:
        self.foreign.append(trial)

    @property
    def done(self) -> bool:
        return not self.script


def db_url(tmp_path: Any, name: str = "t.db") -> str:
    return f"sqlite:///{tmp_path / name}"


class SlowQuadApp(BigQuadApp):
    """BigQuadApp taking ~5 ms per trial, so a test can kill it mid-run."""

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        import time

        time.sleep(0.005)
        return super().run(config, limit)


class FlagApp(QuadApp):
    """QuadApp with an app-specific flag added to its objective."""

    @classmethod
    def add_arguments(cls, parser: Any) -> None:
        parser.add_argument("--offset", type=int, default=0)

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        return float(super().run(config, limit).time + self.args.offset)
