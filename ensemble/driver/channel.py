"""The same-thread channel: the one link between a search driver and the worker in its thread.

Why it exists: with one local worker, the search and the measurement run in
the same thread, one trial after the other.  Going through the database for
everything would cost two extra transactions and a read-back per trial, so
the loop lets the search insert its requests already claimed for that worker
(``Storage.add_and_claim``) and lets the worker hand its committed result
straight back.  Both still go through the database (every request and result
is committed as usual, so nothing is lost on a crash and attached workers see
the same states); the channel only carries what the other side would
otherwise read back.  Everything that passes between the two drivers passes
here, explicitly: the search driver and the measurement driver each get the
channel in their constructor and know nothing else of each other.

Not thread-safe on purpose: both ends live in one thread.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    from ensemble.storage.records import Claim

__all__ = ["LocalResult", "SameThreadChannel"]


@dataclass(frozen=True)
class LocalResult:
    """A result the same-thread worker has just committed."""

    request_id: int
    state: str
    value: float | None
    cost: float | None
    worker: str
    metrics: dict[str, Any] | None = None


class SameThreadChannel:
    """Claims from the search to the worker, committed results from the worker to the search.

    ``worker`` is the worker's name; ``claim_new`` tells the search driver to
    insert new requests already claimed for it (the loop turns it off when
    trials are slow, so that an attached worker can take WAITING requests);
    ``queue_depth`` is how many requests the search keeps for that worker.
    """

    def __init__(self, worker: str) -> None:
        self.worker = worker
        self.claim_new = False
        self.queue_depth = 1
        self._claims: deque[Claim] = deque()
        self._configs: dict[int, dict[str, Any]] = {}
        self._results: deque[LocalResult] = deque()

    # -- search side ---------------------------------------------------------------
    def put_claims(self, claims: list[Claim], configs: dict[int, dict[str, Any]] | None = None) -> None:
        """Requests inserted already RUNNING for :attr:`worker`: the worker measures them next.

        ``configs`` (request id -> configuration dict) spares the worker decoding
        the stored JSON of a configuration the search holds already.
        """
        self._claims.extend(claims)
        if configs:
            self._configs.update(configs)

    def take_results(self) -> list[LocalResult]:
        """Results committed by the worker since the last call, in commit order."""
        out = list(self._results)
        self._results.clear()
        return out

    # -- worker side ---------------------------------------------------------------
    def take_claims(self) -> list[Claim]:
        """Every claim the search made for the worker since the last call."""
        out = list(self._claims)
        self._claims.clear()
        return out

    def take_config(self, request_id: int) -> dict[str, Any] | None:
        """The configuration dict of a request handed over with :meth:`put_claims`, if any."""
        return self._configs.pop(request_id, None)

    def put_result(self, result: LocalResult) -> None:
        self._results.append(result)

    def __len__(self) -> int:
        """Claims not yet taken by the worker."""
        return len(self._claims)
