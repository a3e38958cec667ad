"""The storage interface: what every results store promises the drivers, stated once.

Why an abstract class: the search driver, the measurement workers, ``tune``
and the reports used to be typed ``storage: Any`` against one SQL class, so
an in-memory store for throw-away runs (and fast technique tests) could not
be swapped in or checked.  :class:`BaseStorage` is the seam; the SQL store
(:class:`~ensemble.storage.storage.SQLStorage`) and the in-memory store
(:class:`~ensemble.storage.memory.MemoryStorage`) implement it, and one
conformance suite (``tests/ensemble/storage/suite.py``) runs on both.

The contract, which every implementation keeps:

* **Request states** (:class:`~ensemble.result.TrialState`):
  ``WAITING -> RUNNING -> OK | FAILED | TIMEOUT | INVALID``.  A request is
  created WAITING (or RUNNING for the inserting worker, ``claim_for``), or
  already finished when it is a duplicate.  Finished requests refuse every
  further update: ``finish`` returns False, ``heartbeat`` does not count
  them, ``requeue_stale`` and ``claim`` never touch them.
* **Atomic claims**: ``claim`` moves WAITING requests to RUNNING and returns
  only those this call won; a lost race is an empty list, never an
  exception.  ``finish`` succeeds only for a request RUNNING by the named
  worker, so a requeued request's late result from its old worker is refused.
* **Heartbeats on the store's clock**: ``heartbeat`` and ``requeue_stale``
  compare times taken by the store itself (the database server's clock for
  SQL, ``time.monotonic`` for memory), never the caller's, so clock skew
  between hosts cannot requeue a live request.
* **Dedup per run by configuration hash**: a configuration is stored once per
  run; a request marked ``duplicate`` is answered from the earliest measured
  (non-duplicate) result of its configuration, copied with cost 0, and is
  never measured.
* **``submit``** (several search drivers on one run): per item ``"new"``,
  ``"duplicate"``, ``"pending"`` (another request measures it now: wait for
  ``wait_for[i]``) or ``"over_budget"``; decided atomically against every
  other submitter of the run.
* **Thread safety**: one object may be shared by threads; every public
  method is atomic with respect to the others.
* **Records**: methods take and return the frozen dataclasses of
  :mod:`ensemble.storage.records`; JSON columns are handed out as the
  canonical text of :mod:`ensemble.storage.jsonenc`; timestamps are naive UTC
  ``datetime``; ids are positive integers increasing in insertion order.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from typing import Any, Self

from ensemble.result import TrialState
from ensemble.storage.records import (
    Claim,
    FinishedTrial,
    NewRequest,
    RunRecord,
    Submitted,
    TrialRow,
)

__all__ = ["BaseStorage"]


class BaseStorage(abc.ABC):
    """A results store: runs, configurations, requests and results (see the module docstring).

    Implementations: ``SQLStorage`` (SQLite, PostgreSQL) and ``MemoryStorage``;
    :func:`ensemble.storage.open_storage` picks one from a URL.
    """

    # ------------------------------------------------------------ identity
    @property
    @abc.abstractmethod
    def url(self) -> str:
        """The URL this store was opened with (passwords masked)."""

    @property
    @abc.abstractmethod
    def shareable_across_processes(self) -> bool:
        """Whether another process can open :attr:`url` and see the same data.

        False for the in-memory store: process workers, ``ensemble-tuner
        worker`` and MPI need a store they can reach, and should refuse this
        one with an error that says to pass a ``sqlite:///`` or
        ``postgresql://`` URL.
        """

    @abc.abstractmethod
    def close(self) -> None:
        """Release what the store holds (connections); using it afterwards may reopen them."""

    @abc.abstractmethod
    def __enter__(self) -> Self:
        """Return self: ``with open_storage(url) as s: ...`` closes it on exit."""

    @abc.abstractmethod
    def __exit__(self, *exc: object) -> None:
        """Close the store."""

    # ---------------------------------------------------------------- runs
    @abc.abstractmethod
    def create_run(
        self,
        name: str,
        *,
        app: str,
        space_json: str | dict[str, Any],
        space_hash: str,
        objective_json: str | dict[str, Any] = "{}",
        settings_json: str | dict[str, Any] = "{}",
    ) -> int:
        """Create run ``name`` (status "created") and return its id; an existing one with the same space keeps its id.

        ``*_json`` are stored as given when text, else encoded by jsonenc.
        Race-free between creators of one name.  Raises StorageError for an
        empty name and RunExistsError for an existing run whose
        ``space_hash`` differs.
        """

    @abc.abstractmethod
    def get_run(self, name: str) -> RunRecord | None:
        """The run called ``name``, or None."""

    @abc.abstractmethod
    def list_runs(self) -> list[RunRecord]:
        """Every run, oldest first."""

    @abc.abstractmethod
    def set_run_status(self, run_id: int, status: str) -> None:
        """Record a run's status and touch ``updated_at``; StorageError for an unknown run id."""

    # ------------------------------------------------------------ requests
    @abc.abstractmethod
    def add_requests(
        self, run_id: int, items: Sequence[NewRequest], *, claim_for: str | None = None
    ) -> list[int]:
        """Insert requests atomically and return their ids in item order.

        New configurations are stored (unique per run by hash).  A
        ``duplicate=True`` item is stored already finished with a copy of its
        configuration's earliest measured result (cost 0, no worker, no claim
        stamps); if there is none, StorageError is raised and nothing is
        written.  ``claim_for=worker`` inserts the other items RUNNING by that
        worker, with claim and heartbeat stamped, as a ``claim`` right after
        the insert would, but atomically with it.
        """

    @abc.abstractmethod
    def add_and_claim(self, run_id: int, items: Sequence[NewRequest], worker: str) -> tuple[list[int], list[Claim]]:
        """``add_requests(run_id, items, claim_for=worker)`` plus a Claim per non-duplicate item, in item order."""

    @abc.abstractmethod
    def submit(
        self, run_id: int, items: Sequence[NewRequest], *, claim_for: str | None = None,
        budget: int | None = None,
    ) -> Submitted:
        """Insert requests so that each configuration is measured at most once in the run.

        Per item: ``"new"`` (inserted to measure), ``"duplicate"`` (asked as
        one, or another request of the run has finished it: stored as a copy
        of that result), ``"pending"`` (nothing inserted; another request of
        the run, or an earlier item of this batch, measures it now: wait for
        ``wait_for[i]``), ``"over_budget"`` (nothing inserted: the run already
        has ``budget`` measured requests, counted over every submitter).
        Configurations of pending and over-budget items are stored without a
        request.  Atomic against every other submitter of the run.
        """

    @abc.abstractmethod
    def claim(self, run_id: int, worker: str, n: int = 1) -> list[Claim]:
        """Atomically move up to ``n`` WAITING requests (oldest first) to RUNNING for ``worker``.

        Returns only the requests this call won; [] when none are waiting or
        another worker won them.  StorageError for an empty or non-string worker.
        """

    @abc.abstractmethod
    def heartbeat(self, request_ids: Sequence[int], worker: str) -> int:
        """Touch (store's clock) the heartbeat of those requests still RUNNING by ``worker``; return how many."""

    @abc.abstractmethod
    def finish(
        self,
        request_id: int,
        worker: str,
        *,
        state: TrialState | str,
        value: float | None = None,
        metrics: dict[str, Any] | None = None,
        times: Sequence[float] | None = None,
        cost: float | None = None,
        reason: str | None = None,
    ) -> bool:
        """Store the result of a request RUNNING by ``worker``; False (nothing written) otherwise.

        ``state`` is a finished TrialState or its string (StorageError
        otherwise, nothing written); value NaN is stored as None, infinities
        are kept; metrics/times must be JSON-able (StorageError naming the
        key otherwise).
        """

    @abc.abstractmethod
    def requeue_stale(self, run_id: int, older_than_s: float) -> int:
        """Return RUNNING requests whose heartbeat is older than ``older_than_s`` (store's clock) to WAITING."""

    @abc.abstractmethod
    def withdraw_waiting(self, run_id: int, request_ids: Sequence[int]) -> list[int]:
        """Delete those of ``request_ids`` still WAITING (a stopped search's queue); return the ids deleted."""

    # ------------------------------------------------------------- reading
    @abc.abstractmethod
    def finished_since(self, run_id: int, after_request_id: int) -> list[FinishedTrial]:
        """Finished requests with id > ``after_request_id``, in request-id order.

        Requests finish out of id order: pass one less than the lowest id not
        yet seen finished and skip ids already seen; that never misses one.
        """

    @abc.abstractmethod
    def result_for_hash(self, run_id: int, config_hash: str) -> FinishedTrial | None:
        """The earliest measured (non-duplicate) finished request of that configuration in the run, or None."""

    @abc.abstractmethod
    def counts(self, run_id: int) -> dict[str, int]:
        """Requests per state (every state key present) plus ``requests``, ``duplicates``, ``measured``, ``unique``.

        May scan the run: for progress lines and reports, not every trial.
        """

    @abc.abstractmethod
    def trials(self, run_id: int) -> list[TrialRow]:
        """Every request of the run with its result (None fields if unfinished), in request-id order."""

    # ----------------------------------------------------------- run state
    @abc.abstractmethod
    def put_state(self, run_id: int, key: str, obj: Any) -> None:
        """Store a JSON-able object under ``key`` for the run, replacing any earlier one."""

    @abc.abstractmethod
    def get_state(self, run_id: int, key: str, default: Any = None) -> Any:
        """A fresh decoded copy of the object stored under ``key`` for the run, or ``default``."""
