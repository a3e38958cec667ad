"""Shared plumbing for the search techniques.

Two bases live here:

* :class:`BaseTechnique` binds a technique to a space, keeps the best result
  seen (its own and, through ``observe_foreign``, the other techniques' of an
  ensemble), remembers every value it has been told about so that a technique
  never pays for a configuration twice, and offers the unit-cube helpers that
  most techniques need (``decode`` repairs what ``from_unit`` rounds, so no
  proposal is ever invalid).
* :class:`SequentialTechnique` lets a technique be written as a generator,
  the way textbooks write Nelder-Mead: ``value = yield config`` or
  ``values = yield [c1, c2, ...]`` for a batch that parallel workers can
  measure at once.  The idea is OpenTuner's ``SequentialSearchTechnique``
  (Ansel et al., PACT 2014); this is our own implementation on top of the
  ask/tell interface of :mod:`ensemble.technique`.

A configuration whose value is already known is answered locally (the
generator gets the value back without a proposal), so a simplex that rounds to
the same discrete point costs neither budget nor a driver round trip.
"""

from __future__ import annotations

import abc
import logging
import math
from collections.abc import Generator, Sequence
from typing import Any, ClassVar

import numpy as np

from ensemble.errors import TechniqueError
from ensemble.technique import Technique, Trial
from techniques.feasibility import KINDS, FeasibilityModel, accept

__all__ = ["DEFAULT_FEASIBILITY", "FILTER_FLOOR", "FILTER_THRESHOLD", "BaseTechnique", "SequentialTechnique",
           "Step"]

#: the failure classifier every technique learns by default (docs/TECHNIQUES.md, "Learning where
#: configurations fail": the random forest measured best of the three)
DEFAULT_FEASIBILITY: str | None = "forest"
#: a sequential technique answers a step's configuration locally as a failure when the model gives it
#: less than this chance of success (more likely to fail than not) ...
FILTER_THRESHOLD = 0.5
#: ... except with this probability, so a wrong model never shuts a region out for good
FILTER_FLOOR = 0.1

_log = logging.getLogger("ensemble.techniques.base")

#: What a sequential technique's generator yields: one configuration or a batch.
Step = dict[str, Any] | list[dict[str, Any]]


class BaseTechnique(Technique):
    """A technique bound to a space, with best-so-far and value bookkeeping.

    Subclasses implement :meth:`propose` and may override :meth:`_observe`
    (own results) and :meth:`_observe_foreign` (other techniques' results).
    """

    name: ClassVar[str] = "BaseTechnique"
    #: One line for ``--list-techniques``.
    summary: ClassVar[str] = ""

    def __init__(self, *, seed: int | None = None, feasibility: str | None = DEFAULT_FEASIBILITY,
                 **options: Any) -> None:
        if options:
            raise TechniqueError(
                f"{type(self).__name__} got unknown option(s) {sorted(options)}; "
                f"remove them or check the technique's documented keyword arguments"
            )
        if feasibility is not None and feasibility not in KINDS:
            raise TechniqueError(f"{type(self).__name__}: feasibility must be one of {KINDS} or None "
                                 f"(no failure model); got {feasibility!r}")
        super().__init__(seed=seed)
        #: the failure classifier's kind, None for none (techniques.feasibility)
        self.feasibility_kind = feasibility
        #: P(success | config), learnt from every trial this technique sees; None before bind
        self.feasibility: FeasibilityModel | None = None
        self._feasibility_shared = False
        self.seed = seed
        self.space: Any = None
        self.budget: int | None = None
        self.rng: np.random.Generator = np.random.default_rng(seed)
        self.best_value: float = math.inf
        self.best_config: dict[str, Any] | None = None
        self.known: dict[str, float] = {}
        self.evaluations = 0  # own unique evaluations observed
        self._valid_count: int | None | bool = False  # False: not counted yet
        self._exhausted = False

    # -- binding -----------------------------------------------------------
    def bind(self, space: Any, *, budget: int | None, rng: np.random.Generator | None = None) -> None:
        """Attach to ``space``; ``rng`` (from the driver) wins over ``seed``."""
        super().bind(space, budget=budget, rng=rng if rng is not None else np.random.default_rng(self.seed))
        self.space = space
        self.budget = budget
        if rng is not None:
            self.rng = rng
        if not self._feasibility_shared:
            self.feasibility = (None if self.feasibility_kind is None
                                else FeasibilityModel.for_space(space, kind=self.feasibility_kind))
        self._on_bind()

    def share_feasibility(self, model: FeasibilityModel | None) -> None:
        """Use ``model`` (a meta-technique's, fed by it) instead of learning one of our own.

        Why: every arm of an ensemble sees the same trials; one model serves them all.
        """
        self.feasibility = model
        self._feasibility_shared = True

    def _on_bind(self) -> None:
        """Hook for subclasses: set up state that needs the space."""

    def _require_bound(self) -> None:
        if self.space is None:
            raise TechniqueError(
                f"{type(self).__name__}.propose() called before bind(space, budget=..., rng=...); bind it first"
            )

    # -- results -----------------------------------------------------------
    def _record(self, trial: Trial) -> bool:
        """Remember ``trial``; return True when it improved the best so far."""
        value = float(trial.value)
        if math.isnan(value):
            value = math.inf
        if (self.feasibility is not None and not self._feasibility_shared and not trial.duplicate
                and trial.config_hash not in self.known):
            state = str(getattr(trial.state, "value", trial.state))
            # an OK trial without a finite value cannot be used either: learn it as a failure
            self.feasibility.add(self.encode(trial.config), "FAILED" if state == "OK" and value == math.inf
                                 else state)
        self.known[trial.config_hash] = value
        if value < self.best_value:
            self.best_value = value
            self.best_config = dict(trial.config)
            return True
        return False

    def observe(self, trial: Trial) -> None:
        """A result of a configuration this technique proposed."""
        if not trial.duplicate:
            self.evaluations += 1
        self._record(trial)
        self._observe(trial)

    def observe_foreign(self, trial: Trial) -> None:
        """A result another technique of the ensemble proposed."""
        self._record(trial)
        self._observe_foreign(trial)

    def _observe(self, trial: Trial) -> None:
        """Hook: own result (already recorded in ``known`` / best)."""

    def _observe_foreign(self, trial: Trial) -> None:
        """Hook: foreign result (already recorded in ``known`` / best)."""

    def restore(self, trials: Sequence[Trial]) -> None:
        """Resume: learn values and the best so far from the stored history."""
        for trial in trials:
            self._record(trial)

    def state_dict(self) -> dict[str, Any]:
        state: dict[str, Any] = {"best_value": self.best_value, "evaluations": self.evaluations}
        if self.feasibility is not None and not self._feasibility_shared and self.feasibility.failures:
            state["feasibility"] = self.feasibility.state_dict()
        return state

    def p_success(self, configs: list[dict[str, Any]]) -> np.ndarray:
        """The failure model's P(success) for each config (all ones without a model or a failure yet)."""
        model = self.feasibility
        if model is None or not configs or model.failures == 0:
            return np.ones(len(configs))
        return model.p_success(np.vstack([self.encode(c) for c in configs]))

    # -- helpers -----------------------------------------------------------
    def hash(self, config: dict[str, Any]) -> str:
        return str(self.space.config_hash(config))

    def value_of(self, config: dict[str, Any]) -> float | None:
        """Known value of ``config`` (own or foreign), or None."""
        return self.known.get(self.hash(config))

    @property
    def done(self) -> bool:
        return self._exhausted

    def exhausted(self) -> bool:
        """True when every valid configuration of a (small) space is known; then ``done``.

        Counted once, lazily, and only for spaces of at most 10^5 points in the
        product, so it costs nothing on the large spaces where it cannot happen.
        """
        if self._exhausted:
            return True
        if self._valid_count is False:
            size = self.space.size
            self._valid_count = self.space.count_valid(limit=100_000) if size <= 100_000 else None
        if isinstance(self._valid_count, int) and not isinstance(self._valid_count, bool):
            self._exhausted = len(self.known) >= self._valid_count
        return self._exhausted

    def random_config(self) -> dict[str, Any]:
        """A valid configuration drawn by the space (constraints hold)."""
        return dict(self.space.sample(self.rng, 1)[0])

    def encode(self, config: dict[str, Any]) -> np.ndarray:
        return np.asarray(self.space.to_unit(config), dtype=float)

    def decode(self, x: np.ndarray) -> dict[str, Any]:
        """Unit-cube point -> valid configuration (clip, round, repair)."""
        config = self.space.from_unit(np.clip(np.asarray(x, dtype=float), 0.0, 1.0))
        if not self.space.is_valid(config):
            config = self.space.repair(config, self.rng)
        return dict(config)

    def random_point(self) -> np.ndarray:
        """A unit-cube point of a valid configuration (better than U[0,1]^d under constraints)."""
        return self.encode(self.random_config())

    def start_point(self) -> np.ndarray:
        """Where local techniques start: the best known configuration, else a random one.

        After a sequential technique got stuck on known points (``escape``), once at random.
        """
        if getattr(self, "escape", False):
            self.escape = False
            return self.random_point()
        if self.best_config is not None and math.isfinite(self.best_value):
            return self.encode(self.best_config)
        return self.random_point()


class SequentialTechnique(BaseTechnique):
    """Generator-style technique: ``value = yield config`` / ``values = yield [configs]``.

    ``propose(n)`` hands out the configurations of the current step (up to
    ``n`` at a time) and returns ``[]`` while results are outstanding; the
    generator resumes once every configuration of the step has a value.
    Known configurations are answered locally.  When the generator returns,
    or after ``max_stall`` consecutive duplicate results, it is started again
    (:meth:`steps` reads ``best_config`` so restarts begin at the best).
    """

    #: restart the generator after this many duplicate results in a row
    max_stall: ClassVar[int] = 8
    #: steps answered locally inside one propose() before a random restart (twice that: hand one out)
    max_local: ClassVar[int] = 25

    def __init__(self, *, seed: int | None = None, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        self._gen: Generator[Step, Any, None] | None = None
        self._step_configs: list[dict[str, Any]] = []
        self._step_hashes: list[str] = []
        self._step_values: list[float | None] = []
        self._step_is_batch = False
        self._handed = 0
        self._stall = 0
        self._started = False
        self.restarts = 0
        #: step configurations answered locally as likely failures (see _screen)
        self.screened = 0
        self.last_trial: Trial | None = None
        self.escape = False  # set when stuck on known points: the next run starts at random

    @abc.abstractmethod
    def steps(self) -> Generator[Step, Any, None]:
        """The search, as a generator that yields configurations and receives values."""

    # -- generator driving -------------------------------------------------
    def _restart(self) -> None:
        if self._gen is not None:
            self._gen.close()
            self.restarts += 1
        self._gen = self.steps()
        self._started = False
        self._step_configs = []
        self._step_values = []
        self._step_hashes = []
        self._handed = 0
        self._stall = 0

    def _advance(self) -> None:
        """Resume the generator with the completed step's values; load the next step."""
        if self._gen is None:
            self._restart()
        assert self._gen is not None
        empty_restarts = 0
        while True:
            try:
                if not self._started:
                    self._started = True
                    item = next(self._gen)
                else:
                    values = [math.inf if v is None else v for v in self._step_values]
                    item = self._gen.send(values if self._step_is_batch else values[0])
            except StopIteration:
                empty_restarts += 1
                if empty_restarts > 2:
                    raise TechniqueError(f"{type(self).__name__}.steps() returned without yielding; it must yield")
                self._restart()
                continue
            self._load(item)
            return

    def _load(self, item: Step) -> None:
        self._step_is_batch = isinstance(item, list)
        configs = item if isinstance(item, list) else [item]
        if not configs:
            raise TechniqueError(f"{type(self).__name__}.steps() yielded an empty batch; yield at least one config")
        self._step_configs = [dict(c) for c in configs]
        self._step_hashes = [self.hash(c) for c in self._step_configs]
        self._step_values = [self.known.get(h) for h in self._step_hashes]
        self._handed = 0
        self._screen()

    def _screen(self) -> None:
        """Answer the step's likely failures locally (as failures, not remembered), before anyone pays for them.

        A configuration the failure model gives less than FILTER_THRESHOLD
        chance of success is told ``inf`` without being proposed, except with
        probability FILTER_FLOOR (the search still samples the region, so a
        valid optimum next to the boundary is not lost to a wrong model).
        Nothing is written to ``known``: another proposal may still measure it.
        """
        open_ = [i for i, v in enumerate(self._step_values) if v is None]
        if not open_ or self.feasibility is None or self.feasibility.failures == 0:
            return
        p = self.p_success([self._step_configs[i] for i in open_])
        u = self.rng.random(len(open_))
        for i, pi, ui in zip(open_, p, u):
            if not accept(float(pi), FILTER_THRESHOLD, FILTER_FLOOR, float(ui)):
                self._step_values[i] = math.inf
                self.screened += 1

    def _pending_indices(self) -> list[int]:
        return [i for i, v in enumerate(self._step_values) if v is None]

    def propose(self, n: int) -> list[dict[str, Any]]:
        self._require_bound()
        out: list[dict[str, Any]] = []
        local = 0
        while len(out) < n:
            pending = self._pending_indices()
            if self._gen is not None and self._started and pending:
                # hand out what has not been handed out yet
                fresh = [i for i in pending if i >= self._handed]
                if not fresh:
                    break  # waiting for results
                take = fresh[: n - len(out)]
                out.extend(self._step_configs[i] for i in take)
                self._handed = take[-1] + 1
                continue
            if out:
                break  # do not resume the generator while we still owe results
            self._advance()
            if not self._pending_indices():
                local += 1
                if local == self.max_local:
                    # everything it asks for is known: stop if the space is used up,
                    # else begin again somewhere random
                    if self.exhausted():
                        return []
                    self.escape = True
                    self._restart()
                elif local >= 2 * self.max_local:
                    # still only known points: hand one out; the driver answers it as a
                    # duplicate (no budget) and the stall counter restarts us
                    self._step_values[0] = None
                    self._handed = 0
        return out

    def _fill(self, trial: Trial) -> None:
        for i, h in enumerate(self._step_hashes):
            if h == trial.config_hash and self._step_values[i] is None:
                self._step_values[i] = self.known[trial.config_hash]
                # fill repeats of the same configuration in the batch too
                for j in range(i + 1, len(self._step_hashes)):
                    if self._step_hashes[j] == h and self._step_values[j] is None:
                        self._step_values[j] = self._step_values[i]
                return

    def _observe(self, trial: Trial) -> None:
        self.last_trial = trial
        self._fill(trial)
        self._stall = self._stall + 1 if trial.duplicate else 0
        if self._stall >= self.max_stall and not self._pending_indices():
            self._restart()

    def _observe_foreign(self, trial: Trial) -> None:
        # a foreign result may answer something we are waiting for
        self._fill(trial)
