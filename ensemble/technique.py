"""The technique interface the drivers call: ask (propose) / tell (observe).

Techniques live in the ``techniques`` package; the core only defines the
contract so that drivers, meta-techniques and third-party plug-ins agree.
A technique owns its random generator (handed over by :meth:`Technique.bind`)
and never proposes a configuration that violates the space's constraints.
Everything it needs after a restart can be rebuilt from the trials the
database replays through :meth:`Technique.restore`.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

import numpy as np

from ensemble.errors import TechniqueError
from ensemble.result import TrialState

if TYPE_CHECKING:
    from ensemble.space import SearchSpace

__all__ = ["Technique", "Trial"]


@dataclass(frozen=True)
class Trial:
    """One finished request as techniques see it."""

    config: dict[str, Any]
    config_hash: str
    #: objective scalar, lower is better; math.inf for failures
    value: float
    #: "OK", "FAILED", "TIMEOUT" or "INVALID"
    state: str
    #: the leaf technique that requested it, e.g. "NelderMead"
    technique: str
    #: answered from the database, not measured
    duplicate: bool = False
    #: number of unique evaluations at the time it finished
    evaluation: int = 0
    #: seconds the evaluation cost (measured, or the replay's recorded cost);
    #: None where unknown (ask/tell without a cost, the in-memory harness).
    #: Model-based techniques compare their own compute with it.
    cost: float | None = None
    #: the measurement's metrics (``Result.metrics``, e.g. Nsight Compute counters) where the
    #: driver passes them on; None otherwise.  CsTuner models them (Algorithm 2, Eq. 3).
    metrics: Mapping[str, float] | None = None

    @property
    def ok(self) -> bool:
        return self.state == TrialState.OK


class Technique(abc.ABC):
    """Base class of every search technique.

    Subclasses set ``name`` (their registry name), accept their options as
    keyword arguments, and implement :meth:`propose` and :meth:`observe`.
    """

    name: ClassVar[str] = "Technique"

    def __init__(self, *, seed: int | None = None, **options: Any) -> None:
        if options:
            raise TechniqueError(
                f"{type(self).__name__}: unknown option(s) {sorted(options)}; "
                "check the technique's documentation for its options"
            )
        self.seed = seed
        self.space: SearchSpace | None = None
        self.budget: int | None = None
        self.rng: np.random.Generator = np.random.default_rng(seed)
        #: measurement workers the search driver keeps busy, set before each ``propose``: a
        #: technique whose proposals cost time can tell whether it holds the workers up
        self.workers: int = 1

    def bind(
        self, space: SearchSpace, *, budget: int | None, rng: np.random.Generator
    ) -> None:
        """Attach to a space before the first proposal; the driver supplies ``rng``."""
        self.space = space
        self.budget = budget
        self.rng = rng

    @abc.abstractmethod
    def propose(self, n: int) -> list[dict[str, Any]]:
        """Up to ``n`` valid configurations; ``[]`` means "waiting for results"."""

    @abc.abstractmethod
    def observe(self, trial: Trial) -> None:
        """Result of a configuration this technique proposed."""

    def observe_foreign(self, trial: Trial) -> None:
        """Result of a configuration another technique proposed (default: ignore)."""

    def restore(self, trials: Sequence[Trial]) -> None:
        """Rebuild state from the run's history on ``--resume`` (default: replay)."""
        for t in trials:
            if t.technique == self.name:
                self.observe(t)
            else:
                self.observe_foreign(t)

    @property
    def done(self) -> bool:
        """True when the technique will propose nothing more."""
        return False

    def credit_name(self, config_hash: str) -> str:
        """Which leaf technique proposed ``config_hash`` (meta-techniques override)."""
        return self.name

    def state_dict(self) -> dict[str, Any]:
        """Optional JSON-able state to store in run_state."""
        return {}

    def _need_space(self) -> SearchSpace:
        if self.space is None:
            raise TechniqueError(
                f"{type(self).__name__}: bind(space, budget=..., rng=...) must be called "
                "before propose()"
            )
        return self.space

    def __repr__(self) -> str:
        return f"{type(self).__name__}(seed={self.seed!r})"
