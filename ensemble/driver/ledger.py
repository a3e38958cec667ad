"""The request ledger: what one search driver has asked for, what came back, what it cost.

Why a separate object: deduplication, the pending set and the budget are the
rules users rely on ("a configuration is measured once per run; a repeat is
answered from the database and does not count against --test-limit"), and
they are easiest to check when they live apart from the loop that polls the
database and from the code that writes requests.  The ledger does no I/O.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any

from ensemble.result import TrialState
from ensemble.technique import Trial

__all__ = ["RequestLedger", "SearchStatus"]


@dataclass
class SearchStatus:
    """Counters the progress line and the final summary show."""

    trials: int = 0          # finished requests (duplicates included)
    unique: int = 0          # unique evaluations (finished, not duplicates)
    failures: int = 0        # finished unique evaluations that were not OK
    duplicates: int = 0
    best_value: float = math.inf
    best_config: dict[str, Any] | None = None
    best_hash: str | None = None
    best_technique: str | None = None
    last_technique: str = ""
    started: float = field(default_factory=time.monotonic)
    stop_reason: str | None = None


class RequestLedger:
    """In-memory bookkeeping of one search driver's requests.

    * ``unfinished``: request id -> (config, hash) of this driver's measured requests in flight;
    * ``pending``: hash -> technique, configurations requested and not finished (each counts
      once against the budget);
    * ``known``: hash -> the first finished unique trial of each configuration;
    * ``waiting_dups``: hash -> techniques that asked for a pending configuration again
      (answered as duplicates when its result arrives);
    * the read cursor over finished request ids (results finish out of id order).
    """

    def __init__(self) -> None:
        self.status = SearchStatus()
        self.unfinished: dict[int, tuple[dict[str, Any], str]] = {}
        self.pending: dict[str, str] = {}
        self.known: dict[str, Trial] = {}
        self.waiting_dups: dict[str, list[str]] = {}
        self.proposed_here: set[str] = set()
        self._seen: set[int] = set()
        self._high = 0

    # -- budget ------------------------------------------------------------------
    @property
    def pending_unique(self) -> int:
        """Configurations requested and not finished (new unique evaluations in flight)."""
        return len(self.pending)

    def used(self) -> int:
        """Unique evaluations spent by this driver: finished plus in flight."""
        return self.status.unique + len(self.pending)

    def counted_after(self, duplicate: bool) -> int:
        """The evaluation number a result gets (unique evaluations once it is counted)."""
        return self.status.unique + (0 if duplicate else 1)

    # -- requests ----------------------------------------------------------------
    def add_pending(self, config_hash: str, technique: str) -> None:
        self.pending[config_hash] = technique

    def drop_pending(self, config_hash: str) -> bool:
        """Forget a pending configuration; True if it was pending."""
        return self.pending.pop(config_hash, None) is not None

    # -- the read cursor ---------------------------------------------------------
    def seen(self, request_id: int) -> bool:
        return request_id in self._seen

    def mark_seen(self, request_id: int) -> None:
        self._seen.add(request_id)
        self._high = max(self._high, request_id)

    def cursor(self) -> int:
        """Read finished requests with ids above this (see Storage.finished_since)."""
        return min(self.unfinished) - 1 if self.unfinished else self._high

    def trim_seen(self) -> None:
        """Forget seen ids below the cursor (the next read starts above them)."""
        if len(self._seen) > 64:
            cursor = self.cursor()
            self._seen = {i for i in self._seen if i > cursor}

    # -- results -----------------------------------------------------------------
    def account(self, trial: Trial) -> None:
        """Count a finished trial and keep the best."""
        st = self.status
        st.trials += 1
        if trial.duplicate:
            st.duplicates += 1
            return
        st.unique += 1
        self.known.setdefault(trial.config_hash, trial)
        if trial.state != TrialState.OK:
            st.failures += 1
        elif trial.value < st.best_value:
            st.best_value = trial.value
            st.best_config = trial.config
            st.best_hash = trial.config_hash
            st.best_technique = trial.technique
