"""The search driver: asks the root technique, writes requests, reads results.

Why it talks only to the database: measurement workers may be threads, other
processes or other hosts (DESIGN.md, "The data flow"). The driver keeps enough
WAITING requests for the workers, answers a request for an already measured
configuration from the database (a duplicate: not re-measured, not counted),
feeds finished results back to the technique, and decides when to stop.
"""

from __future__ import annotations

import dataclasses
import logging
import math
import time
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ensemble.driver.records import best_of, to_trial
from ensemble.settings import RunSettings
from ensemble.technique import Technique, Trial

__all__ = ["SearchDriver", "SearchStatus"]

_log = logging.getLogger("ensemble.driver")

SEED_TECHNIQUE = "seed"


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


class SearchDriver:
    """One search loop over one run; call :meth:`step` until :attr:`done`."""

    def __init__(
        self,
        storage: Any,
        run_id: int,
        space: Any,
        technique: Technique,
        settings: RunSettings,
        *,
        workers: int = 1,
        trial_limit: float | None = None,
        shared: bool = False,
    ) -> None:
        self.storage = storage
        self.run_id = run_id
        self.space = space
        self.technique = technique
        self.settings = settings
        self.workers = max(1, workers)
        self.trial_limit = trial_limit
        self.status = SearchStatus()
        self._unfinished: dict[int, tuple[dict[str, Any], str]] = {}  # id -> (config, hash) in flight
        self.poll_interval = 0.0             # seconds between database reads in step()
        self.queue_depth = 1                 # requests kept waiting for a single worker
        self._last_poll = -math.inf
        self._seen: set[int] = set()         # finished ids above the read cursor
        self._high = 0                       # highest finished request id seen
        self._pending: dict[str, str] = {}          # hash -> technique, requested and not finished
        self._pending_unique = 0
        self._known: dict[str, Trial] = {}          # hash -> first finished unique trial
        self._waiting_dups: dict[str, list[str]] = {}  # hash -> techniques that asked again
        self._proposed_here: set[str] = set()       # hashes this session's technique proposed
        self._exhausted_since: float | None = None
        self._stale_checked = time.monotonic()
        self.stale_after = 30.0
        self.done = False
        self.listeners: list[Callable[[Trial], None]] = []
        self._recent_workers: deque[str] = deque(maxlen=64)
        #: worker name to insert new requests already claimed for (Storage.add_and_claim), or None
        #: for WAITING requests; set by the same-thread loop, whose worker then adopts the claims
        self.claim_for: str | None = None
        self._claimed: list[Any] = []
        #: other search drivers request in this run (a search per MPI rank): insert through
        #: Storage.submit, which measures a configuration once per run and keeps test_limit for the run
        self.shared = shared
        self._foreign: dict[int, tuple[dict[str, Any], str]] = {}  # other drivers' in-flight ids we wait for
        self._shared_used = 0                # measured requests of the run (all drivers), last known
        self._foreign_polled = self._foreign_checked = time.monotonic()

    # -- set-up ------------------------------------------------------------------
    def restore(self) -> int:
        """Rebuild in-memory state and technique state from the run's history.

        Returns the number of finished trials found (0 for a new run).
        """
        rows = self.storage.trials(self.run_id)
        history: list[Trial] = []
        for row in rows:
            rid = int(row.request_id)
            state = str(row.state)
            config_hash = row.config_hash
            if state in ("WAITING", "RUNNING"):
                if not row.duplicate:
                    self._unfinished[rid] = (row.config, config_hash)
                    self._pending[config_hash] = row.technique
                    self._pending_unique += 1
                continue
            self._seen.add(rid)
            self._high = max(self._high, rid)
            trial = to_trial(row, self._counted_after(row.duplicate))
            self._account(trial)
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

    def _counted_after(self, duplicate: bool) -> int:
        return self.status.unique + (0 if duplicate else 1)

    def add_seeds(self, configs: Sequence[dict[str, Any]]) -> None:
        """Queue seed configurations (already validated) before the technique's."""
        self._submit([(c, SEED_TECHNIQUE) for c in configs])

    # -- the loop ---------------------------------------------------------------
    def step(self) -> int:
        """Read new results, top up the queue, check the stop rules.

        Returns the number of new finished trials seen.
        """
        seen = 0
        if time.monotonic() - self._last_poll >= self.poll_interval:
            seen = self.collect()
        if self._check_stop():
            return seen
        self._top_up()
        self._maybe_requeue()
        if self._foreign:
            self._poll_foreign()
        return seen

    def collect(self) -> int:
        """Feed results finished since the last call to the technique."""
        self._last_poll = time.monotonic()
        rows = self.storage.finished_since(self.run_id, self._cursor())
        fresh = 0
        for row in rows:
            rid = int(row.request_id)
            if rid in self._seen:
                continue
            fresh += 1
            own = self._unfinished.pop(rid, None) is not None or not self.shared
            if self._foreign:
                self._foreign.pop(rid, None)
            self._handle(rid, to_trial(row, self._counted_after(row.duplicate)), row.worker, own=own)
        if len(self._seen) > 64:
            cursor = self._cursor()
            self._seen = {i for i in self._seen if i > cursor}
        return fresh

    def record_local(self, request_id: int, state: str, value: float | None, cost: float | None,
                     worker: str) -> None:
        """A result this process just committed: use it without reading it back.

        The same-thread loop calls this, so a trial costs no extra query; the
        request id is marked seen, and a later read skips it.
        """
        held = self._unfinished.pop(request_id, None)
        if held is None or request_id in self._seen:
            return
        config, config_hash = held
        v = value if (state == "OK" and value is not None and not math.isnan(value)) else math.inf
        trial = Trial(config=config, config_hash=config_hash, value=float(v), state=state,
                      technique=self._pending.get(config_hash, ""), duplicate=False,
                      evaluation=self._counted_after(False), cost=cost)
        self._handle(request_id, trial, worker)

    def _handle(self, rid: int, trial: Trial, worker: str | None, *, own: bool = True) -> None:
        self._seen.add(rid)
        self._high = max(self._high, rid)
        config_hash = trial.config_hash
        if not trial.duplicate:
            if worker:
                self._recent_workers.append(worker)
            if config_hash in self._pending:
                self._pending.pop(config_hash, None)
                self._pending_unique -= 1
        self._account(trial)
        for listener in self.listeners:
            listener(trial)
        self._tell(trial, own)
        for tech in self._waiting_dups.pop(config_hash, []):
            self._submit([(trial.config, tech)])

    def _cursor(self) -> int:
        # Results commit out of request-id order: read from just below the
        # oldest request still in flight and skip ids already seen
        # (Storage.finished_since documents this).
        return min(self._unfinished) - 1 if self._unfinished else self._high

    def _tell(self, trial: Trial, own: bool = True) -> None:
        # own: this driver's request (always, with one driver); another driver's result for a
        # configuration this technique also asked for is foreign, its answer comes as a duplicate
        mine = own and trial.technique != SEED_TECHNIQUE and trial.config_hash in self._proposed_here
        try:
            if mine:
                self.technique.observe(trial)
            else:
                self.technique.observe_foreign(trial)
        except Exception:
            _log.exception("technique %s failed to observe a result", self.technique.name)
            raise

    def _account(self, trial: Trial) -> None:
        st = self.status
        st.trials += 1
        if trial.duplicate:
            st.duplicates += 1
            return
        st.unique += 1
        self._known.setdefault(trial.config_hash, trial)
        if trial.state != "OK":
            st.failures += 1
        if trial.state == "OK" and trial.value < st.best_value:
            st.best_value = trial.value
            st.best_config = trial.config
            st.best_hash = trial.config_hash
            st.best_technique = trial.technique

    def _used(self) -> int:
        """Unique evaluations spent: own view, or (shared) the run's, both drivers' lower bounds."""
        mine = self.status.unique + self._pending_unique
        return max(mine, self._shared_used) if self.shared else mine

    @property
    def budget_spent(self) -> bool:
        """Every evaluation of test_limit is requested or done (with shared=True: by every driver of the run)."""
        return self.settings.test_limit is not None and self._used() >= self.settings.test_limit

    def _budget_left(self) -> float:
        if self.settings.test_limit is None:
            return math.inf
        return self.settings.test_limit - self._used()

    def _check_stop(self) -> bool:
        s, st = self.settings, self.status
        reason = None
        if s.test_limit is not None and not self.shared and st.unique >= s.test_limit:
            reason = f"test limit reached ({st.unique} unique evaluations)"
        elif s.test_limit is not None and self.shared and self._used() >= s.test_limit and not self._pending_unique:
            # the run's budget is spent (by every driver) and this driver's own requests are measured
            reason = f"test limit reached ({self._used()} unique evaluations in the run)"
        elif s.stop_after is not None and time.monotonic() - st.started >= s.stop_after:
            reason = f"time limit reached ({s.stop_after:g} s)"
        elif s.target is not None and st.best_value <= s.target:
            reason = f"target reached ({st.best_value:g} <= {s.target:g})"
        elif self._exhausted():
            reason = "the technique has nothing more to propose"
        if reason is not None:
            st.stop_reason = reason
            self.done = True
        return self.done

    def _exhausted(self) -> bool:
        if self._pending_unique or self._waiting_dups:
            self._exhausted_since = None
            return False
        if self.technique.done:
            return True
        # propose() returned nothing and nothing is in flight: give it a few
        # rounds (some techniques wait for results) before calling it finished.
        return self._exhausted_since is not None and time.monotonic() - self._exhausted_since > 1.0

    def active_workers(self) -> int:
        """Local workers, or more when results show other workers attached."""
        return max(self.workers, len(set(self._recent_workers)))

    def _top_up(self) -> None:
        workers = self.active_workers()
        want = workers + max(1, workers // 2) - self._pending_unique
        if workers == 1:
            # one worker: refill the queue only once it has run dry, so that a
            # batch of requests shares one insert (and the worker one claim)
            want = self.queue_depth if self._pending_unique == 0 else 0
        want = int(min(want, self._budget_left()))
        rounds = 0
        while want > 0 and rounds < 4:
            rounds += 1
            configs = self.technique.propose(want)
            if not configs:
                if self._pending_unique == 0 and self._exhausted_since is None:
                    self._exhausted_since = time.monotonic()
                return
            self._exhausted_since = None
            name = self.technique.name
            items = []
            for config in configs:
                h = self.space.config_hash(config)
                items.append((config, self._credit(h, name), h))
            new_unique = self._submit(items)
            want -= new_unique

    def _credit(self, config_hash: str, default: str) -> str:
        try:
            return self.technique.credit_name(config_hash) or default
        except Exception:  # noqa: BLE001 - credit is cosmetic
            return default

    def _submit(self, items: Sequence[tuple[Any, ...]]) -> int:
        """Write requests; returns how many are new unique evaluations."""
        from ensemble.storage import NewRequest

        batch: list[Any] = []
        new_unique = 0
        json_config: dict[str, dict[str, Any]] = {}
        for config, tech, *known_hash in items:
            config_hash = known_hash[0] if known_hash else self.space.config_hash(config)
            json_config[config_hash] = config
            if tech != SEED_TECHNIQUE:
                self._proposed_here.add(config_hash)
            if config_hash in self._known:
                batch.append(NewRequest(self.space.canonical_json(config), config_hash, tech,
                                        self.trial_limit, duplicate=True))
            elif config_hash in self._pending:
                self._waiting_dups.setdefault(config_hash, []).append(tech)
            else:
                self._pending[config_hash] = tech
                self._pending_unique += 1
                new_unique += 1
                batch.append(NewRequest(self.space.canonical_json(config), config_hash, tech,
                                        self.trial_limit, duplicate=False))
        if batch and self.shared:
            new_unique -= self._submit_shared(batch, json_config)
        elif batch:
            if self.claim_for is not None and not all(item.duplicate for item in batch):
                # one transaction instead of insert + claim; the loop hands the claims to its worker
                ids, claims = self.storage.add_and_claim(self.run_id, batch, self.claim_for)
                self._claimed.extend(claims)
            else:
                ids = self.storage.add_requests(self.run_id, batch)
            answered = []
            for rid, item in zip(ids, batch):
                if not item.duplicate:
                    self._unfinished[int(rid)] = (json_config[item.config_hash], item.config_hash)
                else:
                    answered.append((int(rid), item))
            # duplicates are answered now, from the result we already hold
            for rid, item in answered:
                first = self._known[item.config_hash]
                self._handle(rid, dataclasses.replace(first, technique=item.technique, duplicate=True,
                                                      evaluation=self.status.unique), None)
        self.status.last_technique = items[-1][1] if items else self.status.last_technique
        return new_unique

    def _submit_shared(self, batch: list[Any], json_config: dict[str, dict[str, Any]]) -> int:
        """Insert through Storage.submit (other drivers share the run); returns how many it did not take.

        The database decides, in the insert's transaction, who measures a
        configuration: one another driver already measured is answered as a
        duplicate of that result, one another driver has in flight is waited
        for (answered as a duplicate when its result arrives), and requests
        beyond the run's test_limit are dropped.
        """
        sub = self.storage.submit(self.run_id, batch, claim_for=self.claim_for, budget=self.settings.test_limit)
        if sub.used is not None:
            self._shared_used = sub.used
        self._claimed.extend(sub.claims)
        answered: list[tuple[int, Any]] = []
        converted: list[tuple[int, Any]] = []
        not_taken = 0
        for i, item in enumerate(batch):
            status, rid, h = sub.status[i], sub.ids[i], item.config_hash
            if status == "new":
                self._unfinished[int(rid)] = (json_config[h], h)  # type: ignore[arg-type]
                continue
            if item.duplicate:
                answered.append((int(rid), item))               # type: ignore[arg-type]
                continue
            # counted as a new evaluation of ours in _submit: it is not one
            not_taken += 1
            if self._pending.pop(h, None) is not None:
                self._pending_unique -= 1
            if status == "duplicate":
                converted.append((int(rid), item))              # type: ignore[arg-type]
            elif status == "pending":
                self._waiting_dups.setdefault(h, []).append(item.technique)
                self._foreign[sub.wait_for[i]] = (json_config[h], h)
            else:                                               # over_budget: the run's budget is spent
                self._waiting_dups.pop(h, None)
        for rid, item in converted:
            h = item.config_hash
            if h not in self._known:
                # another driver measured it and this one has not read that result yet: read it now
                src = self.storage.result_for_hash(self.run_id, h)
                if src is not None and int(src.request_id) not in self._seen:
                    self._foreign.pop(int(src.request_id), None)
                    self._handle(int(src.request_id), to_trial(src, self._counted_after(False)), src.worker,
                                 own=False)
            answered.append((rid, item))
        for rid, item in answered:
            first = self._known.get(item.config_hash)
            if first is None:  # pragma: no cover - submit() found a result, so result_for_hash does too
                _log.warning("no stored result for duplicate request %d; its technique gets no answer", rid)
                continue
            self._handle(rid, dataclasses.replace(first, technique=item.technique, duplicate=True,
                                                  evaluation=self.status.unique), None)
        return not_taken

    def _poll_foreign(self) -> None:
        """Answer techniques waiting on other drivers' requests whose results are in (shared runs only).

        Read by configuration, not through the request-id cursor: the cursor
        only moves forward, and the awaited request may be older than it.
        """
        now = time.monotonic()
        if now - self._foreign_polled < 0.02:
            return
        self._foreign_polled = now
        for rid, (_config, h) in list(self._foreign.items()):
            if rid not in self._foreign:
                continue                      # answered while handling another one
            if h in self._known:
                del self._foreign[rid]
                continue
            src = self.storage.result_for_hash(self.run_id, h)
            if src is None:
                continue
            del self._foreign[rid]
            if int(src.request_id) not in self._seen:
                self._handle(int(src.request_id), to_trial(src, self._counted_after(False)), src.worker, own=False)
        self._recheck_foreign()

    def _recheck_foreign(self) -> None:
        """Ask again for configurations waited on in other drivers' requests (shared runs only).

        A stopped driver withdraws its WAITING requests; a configuration waited
        on there would otherwise never be answered.  Submitting it again gives
        "pending" (still in flight), a duplicate (finished) or a new request.
        """
        now = time.monotonic()
        if not self._foreign or now - self._foreign_checked < max(1.0, self.stale_after / 4):
            return
        self._foreign_checked = now
        waits, self._foreign = self._foreign, {}
        for config, h in waits.values():
            techs = self._waiting_dups.pop(h, [])
            if techs and h not in self._known and h not in self._pending:
                self._submit([(config, tech, h) for tech in techs])
            elif techs:
                self._waiting_dups[h] = techs

    def take_claimed(self) -> list[Any]:
        """Claims made by requests inserted with :attr:`claim_for` since the last call (for that worker)."""
        claimed, self._claimed = self._claimed, []
        return claimed

    def _maybe_requeue(self) -> None:
        now = time.monotonic()
        if now - self._stale_checked < max(1.0, self.stale_after / 4):
            return
        self._stale_checked = now
        n = self.storage.requeue_stale(self.run_id, self.stale_after)
        if n:
            _log.warning("requeued %d request(s) whose worker stopped sending heartbeats", n)

    def finish(self) -> None:
        """Tell workers that this search is over (run_state 'search') and withdraw its unclaimed queue.

        Requests still WAITING when the search stops (time limit, target) are
        deleted, so the run holds no phantom pending trial and no worker
        measures past the end; their configurations leave the pending set.
        """
        withdrawn = self.storage.withdraw_waiting(self.run_id, list(self._unfinished)) if self._unfinished else []
        for rid in withdrawn:
            _, config_hash = self._unfinished.pop(rid)
            if self._pending.pop(config_hash, None) is not None:
                self._pending_unique -= 1
        if withdrawn:
            _log.info("search stopped (%s): withdrew %d queued request(s)", self.status.stop_reason, len(withdrawn))
        self.storage.put_state(
            self.run_id, "search",
            {"done": True, "reason": self.status.stop_reason, "unique": self.status.unique},
        )

    def best(self) -> Trial | None:
        return best_of(self._known.values())

