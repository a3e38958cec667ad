"""What identifies a run and what a finished run gives back: plain records, no behaviour.

Why a module of its own: the run session and the loops it drives (local and
MPI) all hand these around; keeping them apart from the session lets the
loops use them without importing the session that imports the loops.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["RunHandle", "TuneResult"]


@dataclass
class TuneResult:
    """What a finished run gives back to Python callers."""

    best_config: dict[str, Any] | None
    best_value: float | None
    evaluations: int
    run_name: str
    database: str
    trials: int = 0
    failures: int = 0
    duplicates: int = 0
    best_technique: str | None = None
    stop_reason: str | None = None
    report_dir: str | None = None
    extra: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class RunHandle:
    """Which run a session works on (JSON-able: MPI rank 0 broadcasts it)."""

    run_id: int
    name: str
    resumed: bool
    reclaimed: int = 0

    def to_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "name": self.name, "resumed": self.resumed, "reclaimed": self.reclaimed}

    @classmethod
    def from_json(cls, d: dict[str, Any]) -> RunHandle:
        return cls(int(d["run_id"]), str(d["name"]), bool(d["resumed"]), int(d.get("reclaimed", 0)))
