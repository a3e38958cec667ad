"""Exact nearest valid row of a component table, without scanning it all.

Repair needs the valid configuration nearest to a point, distance being the
L1 norm over indices normalised by each parameter's range.  Scanning a table
of 2e5 rows costs milliseconds; this index usually answers in a fraction of
that and always gives the same (exact) answer:

1. an upper bound U: the best of cheap candidates looked up by key (every
   point one parameter away from the query, every point one index step away
   in two parameters; rows are encoded as mixed-radix integers, sorted once)
   and of 2048 random valid rows;
2. a column-by-column scan that accumulates partial distances (lower bounds)
   and drops every row whose partial distance already exceeds U; columns
   with the largest step cost go first, so the candidate set shrinks fast;
3. a uniform random choice among all rows at the minimum distance.
"""

from __future__ import annotations

import numpy as np

__all__ = ["TableIndex"]

_TOL = 1e-12
_SAMPLE = 2048


class TableIndex:
    """Sorted keys and per-column data of one component's table of valid rows."""

    def __init__(self, table: np.ndarray, cards: list[int]) -> None:
        self.table = table
        self.cards = np.asarray(cards, dtype=np.int64)
        self.spans = np.maximum(self.cards - 1, 1).astype(np.float64)
        # mixed-radix keys when they fit in int64 (always, for grids below 9.2e18)
        total = 1.0
        for c in cards:
            total *= c
        self.keyed = total < 2.0**62
        if self.keyed:
            mult = np.ones(len(cards), dtype=np.int64)
            for j in range(len(cards) - 2, -1, -1):
                mult[j] = mult[j + 1] * cards[j + 1]
            self.mult = mult
            self.keys = np.sort(table.astype(np.int64) @ mult)
        # columns with the largest cost per index step first: they prune most
        self.order = np.argsort(self.spans, kind="stable")
        # contiguous columns: gathers from a strided view of an int8 table are slow
        self.cols = [np.ascontiguousarray(table[:, j]) for j in range(table.shape[1])]

    def _members(self, keys: np.ndarray) -> np.ndarray:
        pos = np.searchsorted(self.keys, keys)
        pos = np.minimum(pos, self.keys.size - 1)
        return self.keys[pos] == keys

    def _upper_bound(self, here: np.ndarray) -> float:
        """Distance to the best valid point among one-change and two-step neighbours."""
        if not self.keyed or np.any(here < 0) or np.any(here >= self.cards):
            return np.inf
        base = int(here @ self.mult)
        best = np.inf
        # every other value of one parameter
        for j, card in enumerate(self.cards.tolist()):
            vals = np.arange(card, dtype=np.int64)
            keys = base + (vals - here[j]) * self.mult[j]
            ok = self._members(keys)
            if ok.any():
                d = np.abs(vals[ok] - here[j]) / self.spans[j]
                best = min(best, float(d.min()))
        # one step in each of two parameters
        k = len(self.cards)
        if k >= 2:
            pi, pj = np.triu_indices(k, 1)
            for si in (-1, 1):
                for sj in (-1, 1):
                    vi, vj = here[pi] + si, here[pj] + sj
                    inside = (
                        (vi >= 0)
                        & (vi < self.cards[pi])
                        & (vj >= 0)
                        & (vj < self.cards[pj])
                    )
                    if not inside.any():
                        continue
                    ii, jj = pi[inside], pj[inside]
                    keys = base + si * self.mult[ii] + sj * self.mult[jj]
                    ok = self._members(keys)
                    if ok.any():
                        d = 1.0 / self.spans[ii[ok]] + 1.0 / self.spans[jj[ok]]
                        best = min(best, float(d.min()))
        return best

    def _sample_bound(self, here: np.ndarray, rng: np.random.Generator) -> float:
        """Distance to the nearest of a few random valid rows (a bound that always exists)."""
        m = self.table.shape[0]
        if m <= _SAMPLE:
            return np.inf  # small table: the scan is cheap anyway
        pick = self.table[rng.integers(m, size=_SAMPLE)].astype(np.int64)
        return float(
            (np.abs(pick - here[None, :]) / self.spans[None, :]).sum(axis=1).min()
        )

    def nearest(self, here: np.ndarray, rng: np.random.Generator) -> int:
        """Row number of a valid row nearest to index vector ``here`` (ties: random).

        Out-of-range entries of ``here`` (an illegal value) are allowed; they
        only make every row far in that column.
        """
        m = self.table.shape[0]
        bound = min(self._upper_bound(here), self._sample_bound(here, rng)) + _TOL
        rows: np.ndarray | None = None  # None: all rows still in play
        dist = np.zeros(m, dtype=np.float64)
        for j in self.order.tolist():
            lut = np.abs(np.arange(int(self.cards[j])) - here[j]) / self.spans[j]
            col = self.cols[j] if rows is None else self.cols[j][rows]
            dist += lut[col]
            keep = dist <= bound
            if not keep.all():
                rows = np.flatnonzero(keep) if rows is None else rows[keep]
                dist = dist[keep]
        if rows is None:
            rows = np.arange(m)
        low = float(dist.min())
        best = rows[dist <= low + _TOL * max(1.0, low)]
        return int(rng.choice(best))
