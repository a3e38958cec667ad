"""Random search without replacement.

The baseline every comparison is scored against (Bergstra & Bengio, JMLR 13,
2012, "Random search for hyper-parameter optimization"; Willemsen et al.,
FGCS 2024, score 0 = random search).  Draws valid configurations with
``space.sample`` and skips every configuration already known to the ensemble;
when rejection sampling stops finding new points in a finite space, the
remaining valid configurations are enumerated once and shuffled, so a small
space is covered exactly once and the technique then reports ``done``.
"""

from __future__ import annotations

from typing import Any, ClassVar

from techniques.base import BaseTechnique

__all__ = ["Random"]

# enumerate the rest of a space when it has at most this many valid points
_ENUMERATE_LIMIT = 200_000
# configurations drawn per call of space.sample: one vectorised draw costs about as much as a
# single one, and random search spends nearly all its time drawing (scripts/bench_overhead.py)
_DRAW = 32


class Random(BaseTechnique):
    """Uniform random sampling of valid configurations, never repeating one."""

    name: ClassVar[str] = "Random"
    summary: ClassVar[str] = "uniform random valid configurations, without replacement"

    def _on_bind(self) -> None:
        self._proposed: set[str] = set()
        self._rest: list[dict[str, Any]] | None = None
        self._drawn: list[dict[str, Any]] = []

    def _draw(self) -> dict[str, Any]:
        """The next of a batch of valid configurations drawn together (same distribution as one by one)."""
        if not self._drawn:
            self._drawn = [dict(c) for c in self.space.sample(self.rng, _DRAW)]
            self._drawn.reverse()
        return self._drawn.pop()

    def _seen(self, h: str) -> bool:
        return h in self._proposed or h in self.known

    def _from_rest(self) -> tuple[dict[str, Any], str] | None:
        assert self._rest is not None
        while self._rest:
            config = self._rest.pop()
            h = self.hash(config)
            if not self._seen(h):
                return config, h
        self._exhausted = True
        return None

    def _enumerate_rest(self) -> None:
        count = self.space.count_valid(limit=_ENUMERATE_LIMIT)
        if count is None or count > _ENUMERATE_LIMIT:
            self._rest = None
            return
        rest = [c for c in self.space.enumerate_valid() if not self._seen(self.space.config_hash(c))]
        order = self.rng.permutation(len(rest))
        self._rest = [dict(rest[i]) for i in order]

    def _next(self) -> tuple[dict[str, Any], str] | None:
        if self._rest is not None:
            return self._from_rest()
        for _ in range(64):
            config = self._draw()
            h = self.hash(config)
            if not self._seen(h):
                return config, h
        self._drawn = []
        self._enumerate_rest()
        if self._rest is not None:
            return self._from_rest()
        config = self._draw()  # huge space: a repeat is astronomically unlikely to matter
        return config, self.hash(config)

    def propose(self, n: int) -> list[dict[str, Any]]:
        self._require_bound()
        out: list[dict[str, Any]] = []
        while len(out) < n and not self._exhausted:
            drawn = self._next()
            if drawn is None:
                break
            config, h = drawn
            self._proposed.add(h)
            out.append(config)
        return out
