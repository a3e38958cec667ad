"""``WorkgroupSeed``: propose the predicted work-group size(s) first, then hand over to another technique.

Why a technique and not only seed configurations: the tuner's first trials
then carry the predictor's name in the database and the report, so the
prediction's time can be read against the tuned best (docs/CUMMINS.md), and
any technique can take over afterwards (``then="default"`` by default).

Options (all plain values; the prediction itself is made by the caller,
e.g. ``apps.workgroup.seeded``, since techniques never import apps):

* ``first``: configurations, complete or partial (e.g. ``{"wgx": 64, "wgy": 4}``).
  A partial one is completed from a random valid configuration; one that
  violates the space is repaired to the nearest valid configuration.  Keys
  that are not parameters of the space are ignored.
* ``then``: the registry name of the technique that continues.
* ``then_options``: its keyword options.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, ClassVar

from ensemble.technique import Trial
from techniques.base import BaseTechnique

__all__ = ["WorkgroupSeed"]


class WorkgroupSeed(BaseTechnique):
    """The predicted sizes first, then ``then``."""

    name: ClassVar[str] = "WorkgroupSeed"
    summary: ClassVar[str] = "proposes model-predicted work-group sizes first, then hands over (Cummins et al.)"

    def __init__(self, *, seed: int | None = None, first: Sequence[dict[str, Any]] = (), then: str = "default",
                 then_options: dict[str, Any] | None = None) -> None:
        super().__init__(seed=seed)
        self.first = [dict(c) for c in first]
        self.then = then
        self.then_options = dict(then_options or {})
        self.inner: Any = None

    def _complete(self, part: dict[str, Any]) -> dict[str, Any]:
        config = self.random_config()
        config.update({k: v for k, v in part.items() if k in self.space.names})
        if not self.space.is_valid(config):
            config = self.space.repair(config, self.rng)
        return config

    def _on_bind(self) -> None:
        from ensemble.registry import (
            create_technique,  # lazy, as the meta-techniques do
        )

        self._queue = [self._complete(p) for p in self.first]
        self._mine: set[str] = set()
        self.inner = create_technique(self.then, **self.then_options)
        self.inner.bind(self.space, budget=self.budget, rng=self.rng.spawn(1)[0])

    def propose(self, n: int) -> list[dict[str, Any]]:
        self._require_bound()
        out: list[dict[str, Any]] = []
        while self._queue and len(out) < n:
            config = self._queue.pop(0)
            h = self.hash(config)
            if h in self._mine or h in self.known:
                continue
            self._mine.add(h)
            out.append(config)
        if len(out) < n:
            out += self.inner.propose(n - len(out))
        return out

    def _observe(self, trial: Trial) -> None:
        if trial.config_hash in self._mine:
            self.inner.observe_foreign(trial)
        else:
            self.inner.observe(trial)

    def _observe_foreign(self, trial: Trial) -> None:
        self.inner.observe_foreign(trial)

    def restore(self, trials: Sequence[Trial]) -> None:
        super().restore(trials)
        self.inner.restore(trials)

    @property
    def done(self) -> bool:
        return not self._queue and bool(self.inner.done)

    def credit_name(self, config_hash: str) -> str:
        if config_hash in self._mine:
            return self.name
        credit = getattr(self.inner, "credit_name", None)
        return credit(config_hash) if credit is not None else str(getattr(self.inner, "name", self.then))
