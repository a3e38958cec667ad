"""Submit policies: how a search driver writes its requests into the run.

Why two: with one search driver per run (the usual case) the driver knows
every request of the run, so it can decide by itself which configurations are
new and answer repeats from its ledger (:class:`LocalSubmit`).  When several
search drivers share a run (one per MPI rank), none of them knows the others'
requests, so the database decides in the insert's transaction who measures a
configuration and counts the budget over every driver (:class:`SharedSubmit`,
``Storage.submit``); a configuration another driver has in flight is waited
for and answered as a duplicate of its result.

Both report finished trials back through ``deliver(request_id, trial, worker,
own)``, the search driver's single entry for results.
"""

from __future__ import annotations

import abc
import dataclasses
import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ensemble.driver.ledger import RequestLedger
from ensemble.driver.records import to_trial
from ensemble.technique import Trial

if TYPE_CHECKING:  # pragma: no cover
    from ensemble.driver.channel import SameThreadChannel
    from ensemble.storage.base import BaseStorage
    from ensemble.storage.records import NewRequest

__all__ = ["Deliver", "LocalSubmit", "SharedSubmit", "SubmitPolicy"]

_log = logging.getLogger("ensemble.driver")

#: (request id, finished trial, worker that measured it or None, this driver's own request?)
Deliver = Callable[[int, Trial, "str | None", bool], None]


class SubmitPolicy(abc.ABC):
    """Writes a batch of requests and accounts for them in the ledger."""

    def __init__(self, storage: BaseStorage, run_id: int, ledger: RequestLedger, deliver: Deliver,
                 channel: SameThreadChannel | None = None) -> None:
        self.storage = storage
        self.run_id = run_id
        self.ledger = ledger
        self.deliver = deliver
        self.channel = channel

    @abc.abstractmethod
    def write(self, batch: list[NewRequest], configs: dict[str, dict[str, Any]]) -> int:
        """Insert ``batch``; returns how many of its new unique evaluations were not taken."""

    def used(self) -> int:
        """Unique evaluations spent against the budget."""
        return self.ledger.used()

    def run_budget_spent(self, test_limit: int) -> bool:
        """True when the run's budget is spent and this driver has nothing in flight."""
        return self.ledger.status.unique >= test_limit

    def poll(self) -> None:
        """Periodic work between steps (shared runs: answers waited for in other drivers' requests)."""

    def _claim_new(self, batch: list[NewRequest]) -> str | None:
        ch = self.channel
        if ch is not None and ch.claim_new and not all(item.duplicate for item in batch):
            return ch.worker
        return None

    def _answer_duplicates(self, answered: list[tuple[int, NewRequest]]) -> None:
        """Duplicates are answered now, from the result the ledger holds."""
        for rid, item in answered:
            first = self.ledger.known.get(item.config_hash)
            if first is None:  # pragma: no cover - submit() found a result, so the ledger has it
                _log.warning("no stored result for duplicate request %d; its technique gets no answer", rid)
                continue
            self.deliver(rid, dataclasses.replace(first, technique=item.technique, duplicate=True,
                                                  evaluation=self.ledger.status.unique), None, True)


class LocalSubmit(SubmitPolicy):
    """The only search driver of its run: ``add_requests`` (or ``add_and_claim`` for the channel's worker)."""

    def write(self, batch: list[NewRequest], configs: dict[str, dict[str, Any]]) -> int:
        worker = self._claim_new(batch)
        if worker is not None:
            # one transaction instead of insert + claim; the worker takes the claims from the channel
            ids, claims = self.storage.add_and_claim(self.run_id, batch, worker)
            assert self.channel is not None
            self.channel.put_claims(claims, {rid: configs[item.config_hash]
                                             for rid, item in zip(ids, batch) if not item.duplicate})
        else:
            ids = self.storage.add_requests(self.run_id, batch)
        answered = []
        for rid, item in zip(ids, batch):
            if not item.duplicate:
                self.ledger.unfinished[int(rid)] = (configs[item.config_hash], item.config_hash)
            else:
                answered.append((int(rid), item))
        self._answer_duplicates(answered)
        return 0


class SharedSubmit(SubmitPolicy):
    """One of several search drivers of a run: ``Storage.submit`` decides who measures what.

    ``resubmit`` is the search driver's own submit, used to ask again for a
    configuration whose awaited request was withdrawn by a stopped driver.
    """

    def __init__(self, storage: BaseStorage, run_id: int, ledger: RequestLedger, deliver: Deliver,
                 channel: SameThreadChannel | None, *, budget: int | None,
                 resubmit: Callable[[Sequence[tuple[Any, ...]]], int], recheck_every: float = 30.0) -> None:
        super().__init__(storage, run_id, ledger, deliver, channel)
        self.budget = budget
        self.resubmit = resubmit
        self.recheck_every = recheck_every
        self.shared_used = 0                 # measured requests of the run (all drivers), last known
        #: other drivers' in-flight request ids this driver waits for -> (config, hash)
        self.foreign: dict[int, tuple[dict[str, Any], str]] = {}
        self._polled = self._checked = time.monotonic()

    def used(self) -> int:
        return max(self.ledger.used(), self.shared_used)

    def run_budget_spent(self, test_limit: int) -> bool:
        return self.used() >= test_limit and not self.ledger.pending_unique

    def write(self, batch: list[NewRequest], configs: dict[str, dict[str, Any]]) -> int:
        worker = self._claim_new(batch)
        sub = self.storage.submit(self.run_id, batch, claim_for=worker, budget=self.budget)
        if sub.used is not None:
            self.shared_used = sub.used
        if self.channel is not None and sub.claims:
            self.channel.put_claims(sub.claims)
        ledger = self.ledger
        answered: list[tuple[int, NewRequest]] = []
        converted: list[tuple[int, NewRequest]] = []
        not_taken = 0
        for i, item in enumerate(batch):
            status, rid, h = sub.status[i], sub.ids[i], item.config_hash
            if status == "new":
                ledger.unfinished[int(rid)] = (configs[h], h)  # type: ignore[arg-type]
                continue
            if item.duplicate:
                answered.append((int(rid), item))  # type: ignore[arg-type]
                continue
            # counted as a new evaluation of ours by the caller: it is not one
            not_taken += 1
            ledger.drop_pending(h)
            if status == "duplicate":
                converted.append((int(rid), item))  # type: ignore[arg-type]
            elif status == "pending":
                ledger.waiting_dups.setdefault(h, []).append(item.technique)
                self.foreign[sub.wait_for[i]] = (configs[h], h)
            else:                                     # over_budget: the run's budget is spent
                ledger.waiting_dups.pop(h, None)
        for rid, item in converted:
            h = item.config_hash
            if h not in ledger.known:
                # another driver measured it and this one has not read that result yet: read it now
                src = self.storage.result_for_hash(self.run_id, h)
                if src is not None and not ledger.seen(int(src.request_id)):
                    self.foreign.pop(int(src.request_id), None)
                    self.deliver(int(src.request_id), to_trial(src, ledger.counted_after(False)), src.worker, False)
            answered.append((rid, item))
        self._answer_duplicates(answered)
        return not_taken

    def forget(self, request_id: int) -> None:
        """A finished request was read through the cursor: stop waiting for it."""
        self.foreign.pop(request_id, None)

    def poll(self) -> None:
        """Answer techniques waiting on other drivers' requests whose results are in.

        Read by configuration, not through the request-id cursor: the cursor
        only moves forward, and the awaited request may be older than it.
        """
        if not self.foreign:
            return
        now = time.monotonic()
        if now - self._polled < 0.02:
            return
        self._polled = now
        ledger = self.ledger
        for rid, (_config, h) in list(self.foreign.items()):
            if rid not in self.foreign:
                continue                      # answered while handling another one
            if h in ledger.known:
                del self.foreign[rid]
                continue
            src = self.storage.result_for_hash(self.run_id, h)
            if src is None:
                continue
            del self.foreign[rid]
            if not ledger.seen(int(src.request_id)):
                self.deliver(int(src.request_id), to_trial(src, ledger.counted_after(False)), src.worker, False)
        self._recheck()

    def _recheck(self) -> None:
        """Ask again for configurations waited on in other drivers' requests.

        A stopped driver withdraws its WAITING requests; a configuration waited
        on there would otherwise never be answered.  Submitting it again gives
        "pending" (still in flight), a duplicate (finished) or a new request.
        """
        now = time.monotonic()
        if not self.foreign or now - self._checked < max(1.0, self.recheck_every / 4):
            return
        self._checked = now
        ledger = self.ledger
        waits, self.foreign = self.foreign, {}
        for config, h in waits.values():
            techs = ledger.waiting_dups.pop(h, [])
            if techs and h not in ledger.known and h not in ledger.pending:
                self.resubmit([(config, tech, h) for tech in techs])
            elif techs:
                ledger.waiting_dups[h] = techs
