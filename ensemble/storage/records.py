"""Plain, immutable records that the Storage API takes and returns.

The drivers and reports never see SQLAlchemy rows: these dataclasses are the
whole vocabulary between ``ensemble.storage`` and the rest of the tuner, so a
schema change stays inside this package.  JSON columns are handed out as the
stored text (``*_json``) with a decoding property next to it, because the
drivers usually forward the text unchanged and should not pay for a parse.
"""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any

from ensemble.result import TrialState
from ensemble.storage import jsonenc

__all__ = [
    "FINISHED_STATES",
    "REQUEST_STATES",
    "Claim",
    "FinishedTrial",
    "NewRequest",
    "RunRecord",
    "Submitted",
    "TrialRow",
]

#: Every state a request can be in, in lifecycle order (TrialState members equal their strings).
REQUEST_STATES: tuple[TrialState, ...] = tuple(TrialState)
#: The terminal states; a request in one of them refuses further updates.
FINISHED_STATES: tuple[TrialState, ...] = (TrialState.OK, TrialState.FAILED, TrialState.TIMEOUT, TrialState.INVALID)


@dataclass(frozen=True)
class RunRecord:
    """One row of ``runs``: a named tuning run and the descriptions it was created with."""

    id: int
    name: str
    app: str
    space_json: str
    space_hash: str
    objective_json: str
    settings_json: str
    status: str
    created_at: _dt.datetime
    updated_at: _dt.datetime


@dataclass(frozen=True)
class NewRequest:
    """A configuration a technique wants measured (or answered from the database).

    ``duplicate=True`` means the search driver knows this configuration already
    has a finished result in the run: the request is stored already finished,
    with a copy of that result, and is never handed to a measurement worker.
    """

    config_json: str
    config_hash: str
    technique: str
    limit_s: float | None = None
    duplicate: bool = False


@dataclass(frozen=True)
class Submitted:
    """What :meth:`Storage.submit` did with each item, in item order.

    ``status[i]`` is one of:

    * ``"new"``: inserted to be measured (WAITING, or RUNNING for ``claim_for``); ``ids[i]`` is its id.
    * ``"duplicate"``: inserted already finished with a copy of the configuration's earliest measured
      result: asked as a duplicate, or another search driver's request for it has finished.
    * ``"pending"``: nothing inserted: another request of the run measures this configuration right
      now (WAITING or RUNNING); ``wait_for[i]`` is that request's id.  Wait for its result.
    * ``"over_budget"``: nothing inserted: the run already has ``budget`` measured requests.

    ``used`` is the run's number of measured (non-duplicate) requests in any state after the call
    when a ``budget`` was given, else None.
    """

    ids: list[int | None]
    status: list[str]
    wait_for: dict[int, int]
    claims: list[Claim]
    used: int | None = None


@dataclass(frozen=True)
class Claim:
    """A request this worker won: measure ``config_json`` within ``limit_s`` seconds."""

    request_id: int
    configuration_id: int
    config_json: str
    limit_s: float | None

    @property
    def config(self) -> dict[str, Any]:
        """The configuration as a dict (decoded on each access)."""
        return jsonenc.loads(self.config_json)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class FinishedTrial:
    """A finished request with its result, as the search driver and techniques read it."""

    request_id: int
    configuration_id: int
    config_hash: str
    config_json: str
    technique: str
    state: TrialState
    value: float | None
    duplicate: bool
    worker: str | None
    cost: float | None
    reason: str | None
    finished_at: _dt.datetime | None
    metrics: dict[str, Any] = field(default_factory=dict)
    times: list[float] = field(default_factory=list)

    @property
    def config(self) -> dict[str, Any]:
        """The configuration as a dict (decoded on each access)."""
        return jsonenc.loads(self.config_json)  # type: ignore[no-any-return]


@dataclass(frozen=True)
class TrialRow:
    """Every request of a run with its result if it has one (``None`` fields otherwise); for reports."""

    request_id: int
    configuration_id: int
    config_hash: str
    config_json: str
    technique: str
    state: TrialState
    duplicate: bool
    worker: str | None
    limit_s: float | None
    created_at: _dt.datetime
    claimed_at: _dt.datetime | None
    finished_at: _dt.datetime | None
    value: float | None
    cost: float | None
    reason: str | None
    metrics: dict[str, Any] = field(default_factory=dict)
    times: list[float] = field(default_factory=list)

    @property
    def config(self) -> dict[str, Any]:
        """The configuration as a dict (decoded on each access)."""
        return jsonenc.loads(self.config_json)  # type: ignore[no-any-return]
