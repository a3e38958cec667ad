"""RunSettings: the one object the drivers take.

Why a dataclass and not an argparse namespace: the drivers are used from the
command line, from ``ensemble.tune(...)``, from ``ensemble-tuner worker`` and from
tests, and each of those builds its settings differently. A typed, validated
object keeps argparse at the edge (docs/INTERNALS.md, "Drivers and the app").
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from ensemble.errors import EnsembleError

__all__ = ["DEFAULT_DATABASE", "RunSettings"]

DEFAULT_DATABASE = "sqlite:///ensemble.db"


class SettingsError(EnsembleError, ValueError):
    """A RunSettings field has a value the drivers cannot use."""


@dataclass
class RunSettings:
    """Everything a tuning run needs besides the app itself.

    ``busy_timeout`` is how long a database write waits for a lock;
    ``heartbeat_timeout`` is how long a RUNNING request may go without a
    heartbeat before it is handed to another worker. ``batch`` > 1 lets the
    single same-thread worker propose and claim that many fast trials at once
    (fewer transactions; the technique then sees results up to batch-1 late).
    ``test_limit`` counts unique evaluations (duplicates answered from the
    database do not count); ``stop_after`` is wall-clock seconds; ``target``
    stops the run once the objective value (lower-is-better scalar) reaches it.
    """

    technique: str = "default"
    stop_after: float | None = None
    test_limit: int | None = None
    target: float | None = None
    database: str = DEFAULT_DATABASE
    run_name: str | None = None
    resume: bool = False
    parallelism: int = 1
    seed: int | None = None
    seed_configurations: list[str] = field(default_factory=list)
    results_log: str | None = None
    report_dir: str | None = None
    quiet: bool = False
    trial_limit: float | None = None
    worker_mode: str = "thread"
    busy_timeout: float = 30.0
    heartbeat_timeout: float = 30.0
    batch: int = 1
    technique_options: dict[str, Any] = field(default_factory=dict)
    #: constraints added to the app's space for this run only (``--require EXPR``), e.g. ``["x >= 2"]``
    require: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.validate()

    def validate(self) -> None:
        """Raise SettingsError naming the field and the fix; called on creation."""
        if self.parallelism < 0:
            raise SettingsError(
                f"parallelism={self.parallelism!r}: must be >= 0 (0: only workers attached with `ensemble-tuner worker`)"
            )
        if self.worker_mode not in ("thread", "process"):
            raise SettingsError(
                f"worker_mode={self.worker_mode!r}: use 'thread' (subprocess/GPU objectives) "
                "or 'process' (CPU-bound Python objectives)"
            )
        if self.test_limit is not None and self.test_limit < 0:
            raise SettingsError(f"test_limit={self.test_limit!r}: must be >= 0 (unique evaluations)")
        if self.stop_after is not None and not self.stop_after >= 0:
            raise SettingsError(f"stop_after={self.stop_after!r}: must be a number of seconds >= 0")
        if self.trial_limit is not None and not self.trial_limit > 0:
            raise SettingsError(f"trial_limit={self.trial_limit!r}: must be a number of seconds > 0")
        if not isinstance(self.batch, int) or self.batch < 1:
            raise SettingsError(f"batch={self.batch!r}: must be an integer >= 1 (1: strictly one trial at a time)")
        for name in ("busy_timeout", "heartbeat_timeout"):
            if not getattr(self, name) > 0:
                raise SettingsError(f"{name}={getattr(self, name)!r}: must be a number of seconds > 0")
        if self.target is not None and math.isnan(self.target):
            raise SettingsError("target=nan: give a number, e.g. --target 0.5")
        if isinstance(self.require, str) or not all(isinstance(e, str) for e in self.require):
            raise SettingsError(
                f"require={self.require!r}: give a list of expressions, e.g. require=['x >= 2'] "
                "(--require EXPR, repeatable)"
            )
        if any(not e.strip() for e in self.require):
            raise SettingsError(f"require={self.require!r}: an expression is empty; leave it out")
        if not isinstance(self.database, str) or not self.database:
            raise SettingsError(
                f"database={self.database!r}: give a SQLAlchemy URL such as sqlite:///tuning.db"
            )

    def has_budget(self) -> bool:
        """True when something will stop the run (else the space size stops it)."""
        return self.test_limit is not None or self.stop_after is not None or self.target is not None

    def to_json(self) -> dict[str, Any]:
        """JSON-able form stored with the run (runs.settings_json)."""
        return dataclasses.asdict(self)

    def replace(self, **changes: Any) -> RunSettings:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)
