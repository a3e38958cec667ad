"""The exception hierarchy of ensemble-tuner.

Every exception we raise on purpose derives from :class:`EnsembleError`, so a
caller can catch "anything the tuner refused" in one clause while real bugs
(``AttributeError`` and friends) still surface.  Several classes also derive
from the built-in exception a Python user would expect (``ValueError`` for a
bad argument, ``ImportError`` for a missing package) so that generic handlers
keep working.  Messages name the offending argument and say how to fix it.
"""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "DatabaseLockedError",
    "EnsembleError",
    "InfeasibleSpaceError",
    "MissingExtraError",
    "ObjectiveError",
    "RunExistsError",
    "SchemaVersionError",
    "SpaceError",
    "StorageError",
    "TechniqueError",
]


class EnsembleError(Exception):
    """Base of every error the tuner raises on purpose."""


class SpaceError(EnsembleError, ValueError):
    """A bad parameter definition or a constraint that cannot be understood."""


class InfeasibleSpaceError(SpaceError):
    """No valid configuration exists, or sampling could not find one."""


class ConfigurationError(EnsembleError, ValueError):
    """A configuration that is not a point of the search space."""


class StorageError(EnsembleError):
    """The results database cannot be opened or written."""


class DatabaseLockedError(StorageError):
    """The database stayed locked by another writer past the busy timeout."""


class SchemaVersionError(StorageError):
    """The database has an older schema; the message carries the upgrade command."""


class RunExistsError(StorageError):
    """A run of that name exists with a different space (and ``--resume`` was not given)."""


class ObjectiveError(EnsembleError, TypeError):
    """``run()`` returned NaN, a wrong type, or a result the objective cannot rank."""


class TechniqueError(EnsembleError):
    """Unknown technique name or a bad technique option."""


class MissingExtraError(EnsembleError, ImportError):
    """An optional dependency is missing; the message names the pip extra to install."""
