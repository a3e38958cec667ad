"""The shared results database: runs, configurations, requests and results.

``open_storage(url)`` gives a :class:`BaseStorage`: a :class:`SQLStorage`
(``sqlite:///``, ``postgresql://``; ``Storage`` is its old name) or a
:class:`MemoryStorage` (``memory://[NAME]``).  The contract is in
``base.py`` and docs/INTERNALS.md; docs/storage.md has the user-facing notes
(URLs, SQLite settings, upgrades).
"""

from ensemble.storage.base import BaseStorage
from ensemble.storage.memory import MemoryStorage
from ensemble.storage.opening import open_storage
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
    "FINISHED_STATES",
    "HEAD_REVISION",
    "REQUEST_STATES",
    "BaseStorage",
    "Claim",
    "FinishedTrial",
    "MemoryStorage",
    "NewRequest",
    "RunRecord",
    "SQLStorage",
    "Storage",
    "Submitted",
    "TrialRow",
    "default_database_url",
    "open_storage",
    "upgrade",
]
