"""The shared results database: runs, configurations, requests and results.

``Storage(url)`` is the only thing drivers use; see docs/INTERNALS.md for the
contract and docs/storage.md for the user-facing notes (URLs, SQLite settings,
upgrades).
"""

from ensemble.storage.base import BaseStorage
from ensemble.storage.records import (
    FINISHED_STATES,
    REQUEST_STATES,
    Claim,
    FinishedTrial,
    NewRequest,
    RunRecord,
    Submitted,
    TrialRow,
)
from ensemble.storage.schema import HEAD_REVISION, upgrade
from ensemble.storage.storage import SQLStorage, Storage, default_database_url

__all__ = [
    "BaseStorage",
    "FINISHED_STATES",
    "HEAD_REVISION",
    "REQUEST_STATES",
    "Claim",
    "FinishedTrial",
    "NewRequest",
    "RunRecord",
    "SQLStorage",
    "Storage",
    "Submitted",
    "TrialRow",
    "default_database_url",
    "upgrade",
]
