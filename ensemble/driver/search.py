"""The search driver: asks the root technique, writes requests, reads results, decides when to stop.

Why it talks only to the database: measurement workers may be threads, other
processes or other hosts (DESIGN.md, "The data flow").  The driver keeps
enough WAITING requests for the workers, answers a request for an already
measured configuration from the database (a duplicate: not re-measured, not
counted), feeds finished results back to the technique, and decides when to
stop.  Its parts: the :class:`~ensemble.driver.ledger.RequestLedger` (dedup,
pending, budget), a :mod:`submit policy <ensemble.driver.submit>` (alone in
the run, or sharing it with other search drivers) and, in the same-thread
loop only, the explicit :class:`~ensemble.driver.channel.SameThreadChannel`.
Everything else it needs comes in through the constructor.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ensemble.driver.ledger import RequestLedger, SearchStatus
from ensemble.driver.records import best_of, to_trial
from ensemble.driver.submit import LocalSubmit, SharedSubmit, SubmitPolicy
from ensemble.result import TrialState
from ensemble.technique import Technique, Trial

if TYPE_CHECKING:  # pragma: no cover
    from ensemble.driver.channel import LocalResult, SameThreadChannel
    from ensemble.settings import RunSettings
    from ensemble.space import SearchSpace
    from ensemble.storage.base import BaseStorage

__all__ = ["SEED_TECHNIQUE", "SearchDriver", "SearchOptions", "SearchStatus"]

_log = logging.getLogger("ensemble.driver")

#: the technique name recorded for seed configurations
SEED_TECHNIQUE = "seed"


@dataclass(frozen=True)
class SearchOptions:
    """What a search driver needs to know besides the store, the run and the technique.

    ``workers``: local measurement workers to keep busy (more are inferred
    from the results when other workers attach); ``shared``: other search
    drivers write requests into the same run (a search per MPI rank);
    ``poll_interval``: seconds between database reads in :meth:`SearchDriver.step`;
    ``stale_after``: seconds without a heartbeat before a RUNNING request goes
    back to WAITING.
    """

    test_limit: int | None = None
    stop_after: float | None = None
    target: float | None = None
    trial_limit: float | None = None
    workers: int = 1
    shared: bool = False
    poll_interval: float = 0.0
    stale_after: float = 30.0

    @classmethod
    def from_settings(cls, settings: RunSettings, **changes: Any) -> SearchOptions:
        return cls(test_limit=settings.test_limit, stop_after=settings.stop_after, target=settings.target,
                   trial_limit=settings.trial_limit, stale_after=settings.heartbeat_timeout, **changes)


class SearchDriver:
    """One search loop over one run; call :meth:`step` until :attr:`done`."""

    def __init__(self, storage: BaseStorage, run_id: int, space: SearchSpace, technique: Technique,
                 options: SearchOptions | None = None, *, channel: SameThreadChannel | None = None) -> None:
        self.storage = storage
        self.run_id = run_id
        self.space = space
        self.technique = technique
        self.options = options or SearchOptions()
        self.channel = channel
        self.ledger = RequestLedger()
        self.status: SearchStatus = self.ledger.status
        self.done = False
        #: called with every finished trial this driver reads (results log, progress)
        self.listeners: list[Callable[[Trial], None]] = []
        self._workers = max(1, self.options.workers)
        self._recent_workers: deque[str] = deque(maxlen=64)
        self._distinct_workers = 0           # distinct names in _recent_workers
        self._last_poll = -math.inf
        self._exhausted_since: float | None = None
        self._stale_checked = time.monotonic()
        self.submitter: SubmitPolicy
        if self.options.shared:
            self.submitter = SharedSubmit(storage, run_id, self.ledger, self._handle, channel,
                                          budget=self.options.test_limit, resubmit=self._submit,
                                          recheck_every=self.options.stale_after)
        else:
            self.submitter = LocalSubmit(storage, run_id, self.ledger, self._handle, channel)

    # -- set-up ------------------------------------------------------------------
    def restore(self) -> int:
        """Rebuild the ledger and the technique's state from the run's history; returns the trials found."""
        ledger = self.ledger
        history: list[Trial] = []
        for row in self.storage.trials(self.run_id):
            rid = int(row.request_id)
            state = str(row.state)
            if state in (TrialState.WAITING, TrialState.RUNNING):
                if not row.duplicate:
                    ledger.unfinished[rid] = (row.config, row.config_hash)
                    ledger.add_pending(row.config_hash, row.technique)
                continue
            ledger.mark_seen(rid)
            trial = to_trial(row, ledger.counted_after(row.duplicate))
            ledger.account(trial)
            if self.space_accepts(trial.config):
                history.append(trial)
        if history:
            self.technique.restore(history)
        return len(history)

    def space_accepts(self, config: dict[str, Any]) -> bool:
        try:
            return bool(self.space.is_valid(config))
        except Exception:  # noqa: BLE001 - an old config of another space
            return False

    def add_seeds(self, configs: Sequence[dict[str, Any]]) -> None:
        """Queue seed configurations (already validated) before the technique's."""
        self._submit([(c, SEED_TECHNIQUE) for c in configs])

    def set_workers(self, n: int) -> None:
        """How many measurement workers to keep busy (ask/tell: the configurations asked and not told)."""
        self._workers = max(1, n)

    # -- the loop ---------------------------------------------------------------
    def step(self) -> int:
        """Read new results, top up the queue, check the stop rules; returns new finished trials seen."""
        seen = 0
        if time.monotonic() - self._last_poll >= self.options.poll_interval:
            seen = self.collect()
        elif self.channel is not None:
            seen = self._collect_channel()
        if self._check_stop():
            return seen
        self._top_up()
        self._maybe_requeue()
        self.submitter.poll()
        return seen

    def collect(self) -> int:
        """Feed results finished since the last call to the technique."""
        fresh = self._collect_channel() if self.channel is not None else 0
        self._last_poll = time.monotonic()
        ledger = self.ledger
        shared = self.options.shared
        for row in self.storage.finished_since(self.run_id, ledger.cursor()):
            rid = int(row.request_id)
            if ledger.seen(rid):
                continue
            fresh += 1
            own = ledger.unfinished.pop(rid, None) is not None or not shared
            if shared:
                self.submitter.forget(rid)  # type: ignore[attr-defined]
            self._handle(rid, to_trial(row, ledger.counted_after(row.duplicate)), row.worker, own)
        ledger.trim_seen()
        return fresh

    def _collect_channel(self) -> int:
        """Results the same-thread worker has just committed: used without reading them back."""
        assert self.channel is not None
        n = 0
        for res in self.channel.take_results():
            n += self._record_local(res)
        return n

    def _record_local(self, res: LocalResult) -> int:
        ledger = self.ledger
        held = ledger.unfinished.pop(res.request_id, None)
        if held is None or ledger.seen(res.request_id):
            return 0
        config, config_hash = held
        value = res.value
        v = value if (res.state == TrialState.OK and value is not None and not math.isnan(value)) else math.inf
        trial = Trial(config=config, config_hash=config_hash, value=float(v), state=res.state,
                      technique=ledger.pending.get(config_hash, ""), duplicate=False,
                      evaluation=ledger.counted_after(False), cost=res.cost, metrics=res.metrics)
        self._handle(res.request_id, trial, res.worker, True)
        return 1

    def _handle(self, rid: int, trial: Trial, worker: str | None, own: bool = True) -> None:
        """The one entry for a finished trial: account it, tell listeners and the technique."""
        ledger = self.ledger
        ledger.mark_seen(rid)
        config_hash = trial.config_hash
        if not trial.duplicate:
            if worker:
                recent = self._recent_workers
                if not recent or recent[-1] != worker or len(recent) == recent.maxlen:
                    recent.append(worker)
                    self._distinct_workers = len(set(recent))
                else:
                    recent.append(worker)   # the same worker again: the distinct count is unchanged
            ledger.drop_pending(config_hash)
        ledger.account(trial)
        for listener in self.listeners:
            listener(trial)
        self._tell(trial, own)
        for tech in ledger.waiting_dups.pop(config_hash, []):
            self._submit([(trial.config, tech)])

    def _tell(self, trial: Trial, own: bool = True) -> None:
        # own: this driver's request (always, with one driver); another driver's result for a
        # configuration this technique also asked for is foreign, its answer comes as a duplicate
        mine = own and trial.technique != SEED_TECHNIQUE and trial.config_hash in self.ledger.proposed_here
        try:
            if mine:
                self.technique.observe(trial)
            else:
                self.technique.observe_foreign(trial)
        except Exception:
            _log.exception("technique %s failed to observe a result", self.technique.name)
            raise

    @property
    def budget_spent(self) -> bool:
        """Every evaluation of test_limit is requested or done (shared: by every driver of the run)."""
        limit = self.options.test_limit
        return limit is not None and self.submitter.used() >= limit

    def _budget_left(self) -> float:
        limit = self.options.test_limit
        return math.inf if limit is None else limit - self.submitter.used()

    def _check_stop(self) -> bool:
        o, st = self.options, self.status
        reason = None
        if o.test_limit is not None and self.submitter.run_budget_spent(o.test_limit):
            reason = (f"test limit reached ({self.submitter.used()} unique evaluations in the run)" if o.shared
                      else f"test limit reached ({st.unique} unique evaluations)")
        elif o.stop_after is not None and time.monotonic() - st.started >= o.stop_after:
            reason = f"time limit reached ({o.stop_after:g} s)"
        elif o.target is not None and st.best_value <= o.target:
            reason = f"target reached ({st.best_value:g} <= {o.target:g})"
        elif self._exhausted():
            reason = "the technique has nothing more to propose"
        if reason is not None:
            st.stop_reason = reason
            self.done = True
        return self.done

    def _exhausted(self) -> bool:
        if self.ledger.pending_unique or self.ledger.waiting_dups:
            self._exhausted_since = None
            return False
        if self.technique.done:
            return True
        # propose() returned nothing and nothing is in flight: give it a few
        # rounds (some techniques wait for results) before calling it finished.
        return self._exhausted_since is not None and time.monotonic() - self._exhausted_since > 1.0

    def active_workers(self) -> int:
        """Local workers, or more when results show other workers attached."""
        return max(self._workers, self._distinct_workers)

    def _top_up(self) -> None:
        workers = self.active_workers()
        pending = self.ledger.pending_unique
        want = workers + max(1, workers // 2) - pending
        if workers == 1:
            # one worker: refill the queue only once it has run dry, so that a
            # batch of requests shares one insert (and the worker one claim)
            depth = self.channel.queue_depth if self.channel is not None else 1
            want = depth if pending == 0 else 0
        want = int(min(want, self._budget_left()))
        rounds = 0
        name = self.technique.name
        self.technique.workers = workers
        while want > 0 and rounds < 4:
            rounds += 1
            configs = self.technique.propose(want)
            if not configs:
                if self.ledger.pending_unique == 0 and self._exhausted_since is None:
                    self._exhausted_since = time.monotonic()
                return
            self._exhausted_since = None
            items = []
            for config in configs:
                # one canonical text per configuration: its hash and the stored JSON
                text = self.space.canonical_json(config)
                h = hashlib.sha256(text.encode("utf-8")).hexdigest()
                items.append((config, self._credit(h, name), h, text))
            want -= self._submit(items)

    def _credit(self, config_hash: str, default: str) -> str:
        try:
            return self.technique.credit_name(config_hash) or default
        except Exception:  # noqa: BLE001 - credit is cosmetic
            return default

    def _submit(self, items: Sequence[tuple[Any, ...]]) -> int:
        """Write requests; returns how many are new unique evaluations."""
        from ensemble.storage import NewRequest

        ledger = self.ledger
        limit = self.options.trial_limit
        batch: list[NewRequest] = []
        new_unique = 0
        configs: dict[str, dict[str, Any]] = {}
        for config, tech, *known in items:
            # items: (config, technique[, hash[, canonical text]])
            config_hash = known[0] if known else self.space.config_hash(config)
            configs[config_hash] = config
            if tech != SEED_TECHNIQUE:
                ledger.proposed_here.add(config_hash)
            if config_hash in ledger.pending:
                ledger.waiting_dups.setdefault(config_hash, []).append(tech)
                continue
            text = known[1] if len(known) > 1 else self.space.canonical_json(config)
            if config_hash in ledger.known:
                batch.append(NewRequest(text, config_hash, tech, limit, duplicate=True))
            else:
                ledger.add_pending(config_hash, tech)
                new_unique += 1
                batch.append(NewRequest(text, config_hash, tech, limit))
        if batch:
            new_unique -= self.submitter.write(batch, configs)
        if items:
            self.status.last_technique = items[-1][1]
        return new_unique

    def _maybe_requeue(self) -> None:
        now = time.monotonic()
        stale_after = self.options.stale_after
        if now - self._stale_checked < max(1.0, stale_after / 4):
            return
        self._stale_checked = now
        n = self.storage.requeue_stale(self.run_id, stale_after)
        if n:
            _log.warning("requeued %d request(s) whose worker stopped sending heartbeats", n)

    def finish(self) -> None:
        """Tell workers that this search is over (run_state 'search') and withdraw its unclaimed queue.

        Requests still WAITING when the search stops (time limit, target) are
        deleted, so the run holds no phantom pending trial and no worker
        measures past the end; their configurations leave the pending set.
        """
        ledger = self.ledger
        withdrawn = self.storage.withdraw_waiting(self.run_id, list(ledger.unfinished)) if ledger.unfinished else []
        for rid in withdrawn:
            _, config_hash = ledger.unfinished.pop(rid)
            ledger.drop_pending(config_hash)
        if withdrawn:
            _log.info("search stopped (%s): withdrew %d queued request(s)", self.status.stop_reason, len(withdrawn))
        self.storage.put_state(
            self.run_id, "search",
            {"done": True, "reason": self.status.stop_reason, "unique": self.status.unique},
        )
        self._store_technique_state()

    def _store_technique_state(self) -> None:
        """Keep the technique's ``state_dict()`` in run_state "technique" (reports read its report_files)."""
        try:
            state = self.technique.state_dict()
            if state:
                self.storage.put_state(self.run_id, "technique", state)
        except Exception as exc:  # noqa: BLE001 - a report extra must never fail the run
            _log.warning("technique %s: its state could not be stored (%s); the report will lack it",
                         self.technique.name, exc)

    def best(self) -> Trial | None:
        return best_of(self.ledger.known.values())
