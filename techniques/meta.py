"""Common base of meta-techniques: arms, routing of results, credit names.

A meta-technique owns a list of arms (techniques, or registry names it
creates), hands each arm its own random generator spawned from the one it was
bound with (``rng.spawn``, so arms are independent and reproducible), asks one
arm per proposal slot, remembers which arm proposed which configuration, and
routes each result back: ``observe`` to the arm that asked, ``observe_foreign``
to the others, so local techniques can restart at the ensemble's best.
Subclasses decide which arm to ask (:meth:`_pick`) and learn from results
(:meth:`_on_result`).
"""

from __future__ import annotations

import abc
import math
from collections import deque
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from ensemble.errors import TechniqueError
from ensemble.technique import Technique, Trial
from techniques.base import BaseTechnique

__all__ = ["MetaTechnique"]


def _make_arm(arm: str | Technique) -> Technique:
    if isinstance(arm, Technique):
        return arm
    if not isinstance(arm, str):
        raise TechniqueError(f"arms: expected technique names or Technique objects, got {arm!r}")
    from ensemble.registry import (
        create_technique,  # lazy: the registry imports techniques lazily too
    )

    return create_technique(arm)


class MetaTechnique(BaseTechnique):
    """Routes proposals and results between a set of arms."""

    name: ClassVar[str] = "MetaTechnique"

    def __init__(self, *, seed: int | None = None, arms: Sequence[str | Technique] = (),
                 fill: str | Technique | None = None, **options: Any) -> None:
        super().__init__(seed=seed, **options)
        if not arms:
            raise TechniqueError(f"{type(self).__name__}: arms is empty; pass arms=['NelderMead', 'GA', ...]")
        self.arms: list[Technique] = [_make_arm(a) for a in arms]
        if fill is not None and not isinstance(fill, (str, Technique)):
            raise TechniqueError(f"{type(self).__name__}: fill must be a technique name, a Technique or None "
                                 f"(got {fill!r}); e.g. fill='NormalGreedyMutation'")
        #: asked only for what the arms leave unfilled with several workers (see :meth:`propose`)
        self.fill: Technique | None = None if fill is None else _make_arm(fill)
        #: configurations the fill technique has proposed in this process (state_dict's "fill")
        self.filled = 0
        self.labels: list[str] = []
        for arm in self.arms:
            base = str(getattr(arm, "name", type(arm).__name__))
            label, k = base, 2
            while label in self.labels:
                label, k = f"{base}#{k}", k + 1
            self.labels.append(label)
        self._owner: dict[str, deque[int]] = {}
        #: arms never asked (e.g. an arm that does not fit the bound space)
        self.inactive: set[int] = set()

    def _on_bind(self) -> None:
        for arm, child_rng in zip(self.arms, self.rng.spawn(len(self.arms))):
            if isinstance(arm, BaseTechnique):
                arm.share_feasibility(self.feasibility)  # one failure model, fed by the ensemble
            arm.bind(self.space, budget=self.budget, rng=child_rng)
        if self.fill is not None:
            # spawned after the arms: their generators are the same with and without a fill technique
            if isinstance(self.fill, BaseTechnique):
                self.fill.share_feasibility(self.feasibility)
            self.fill.bind(self.space, budget=self.budget, rng=self.rng.spawn(1)[0])

    @property
    def done(self) -> bool:
        return all(bool(getattr(a, "done", False)) or i in self.inactive for i, a in enumerate(self.arms))

    # -- choosing ----------------------------------------------------------
    @abc.abstractmethod
    def _pick(self, blocked: set[int]) -> int | None:
        """Index of the arm to ask next, not in ``blocked``; None when none is left."""

    def _on_result(self, arm: int, credit: bool) -> None:
        """Learn from a result of ``arm`` (credit: novel and improved the best)."""

    def _takes_batch(self, arm: int) -> bool:
        """Whether ``arm``, once picked, is asked for every remaining slot of the batch at once.

        Why: a model arm computes a batch in one call (one refit check, one
        set-up of its linear algebra, the kriging believer between picks);
        asked one slot at a time it repeats that work per configuration.
        """
        return False

    def propose(self, n: int) -> list[dict[str, Any]]:
        self._require_bound()
        out: list[dict[str, Any]] = []
        blocked = {i for i, a in enumerate(self.arms) if getattr(a, "done", False)} | self.inactive
        while len(out) < n:
            i = self._pick(blocked)
            if i is None:
                break
            self.arms[i].workers = self.workers
            got = self.arms[i].propose(n - len(out) if self._takes_batch(i) else 1)
            if not got:
                blocked.add(i)
                continue
            for config in got[: n - len(out)]:
                self._owner.setdefault(self.hash(config), deque()).append(i)
                out.append(config)
        if len(out) < n and self.fill is not None and self.workers > 1:
            # Several workers and every arm has handed out what it can (a generational population
            # waits for its generation; a retired model proposes nothing): the fill technique
            # proposes the rest, so the workers measure instead of waiting.  Under mpirun -n 32 of
            # the default without it the workers were idle 40 % of the time (docs/BENCHMARKS.md).
            # With one worker it is never asked, so a sequential search is unchanged.
            fill_index = len(self.arms)
            self.fill.workers = self.workers
            taken = {self.hash(c) for c in out}
            for config in self.fill.propose(n - len(out))[: n - len(out)]:
                h = self.hash(config)
                if h in taken:
                    continue
                taken.add(h)
                self._owner.setdefault(h, deque()).append(fill_index)
                out.append(config)
                self.filled += 1
        return out

    # -- results -----------------------------------------------------------
    def _arm_of(self, trial: Trial) -> int | None:
        queue = self._owner.get(trial.config_hash)
        if queue:
            i = queue.popleft()
            if not queue:
                del self._owner[trial.config_hash]
            return i
        return self._arm_by_label(trial.technique)

    def _arm_by_label(self, technique: str) -> int | None:
        for i, arm in enumerate(self.arms):
            if technique == self.labels[i] or technique == getattr(arm, "name", None):
                return i
        return None

    @staticmethod
    def _credit(trial: Trial, best_before: float) -> bool:
        """OpenTuner's credit: a novel, successful request that improved the best so far."""
        state = getattr(trial.state, "value", trial.state)
        return (not trial.duplicate and state == "OK"
                and math.isfinite(trial.value) and trial.value < best_before)

    def observe(self, trial: Trial) -> None:
        best_before = self.best_value
        if not trial.duplicate:
            self.evaluations += 1
        self._record(trial)
        i = self._arm_of(trial)
        if i is not None and i < len(self.arms):
            self._on_result(i, self._credit(trial, best_before))
        for j, arm in enumerate(self.arms):
            if j == i:
                arm.observe(trial)
            else:
                arm.observe_foreign(trial)
        if self.fill is not None:
            if i == len(self.arms):
                self.fill.observe(trial)
            else:
                self.fill.observe_foreign(trial)

    def observe_foreign(self, trial: Trial) -> None:
        self._record(trial)
        for arm in self.arms:
            arm.observe_foreign(trial)
        if self.fill is not None:
            self.fill.observe_foreign(trial)

    def arm_report_files(self) -> dict[str, str]:
        """The report files the arms ask for (``state_dict()["report_files"]``), merged.

        Why: a technique that explains itself in the run's report (DLMT's
        dlmt.md) must still do so when it runs as an arm of the bandit.
        """
        files: dict[str, str] = {}
        for arm in self.arms:
            try:
                state = arm.state_dict()
            except Exception:  # noqa: BLE001, S112 - a report extra must never stop the search
                continue
            extra = state.get("report_files") if isinstance(state, dict) else None
            if isinstance(extra, dict):
                files.update(extra)
        return files

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        if self.fill is not None:
            state["fill"] = {"technique": getattr(self.fill, "name", type(self.fill).__name__),
                             "proposed": self.filled}
        files = self.arm_report_files()
        return {**state, "report_files": files} if files else state

    def credit_name(self, config_hash: str) -> str:
        """The leaf technique that proposed ``config_hash`` (for Trial.technique)."""
        queue = self._owner.get(config_hash)
        if not queue:
            return self.name
        i = queue[0]
        if i == len(self.arms) and self.fill is not None:
            return f"fill:{getattr(self.fill, 'name', type(self.fill).__name__)}"
        arm = self.arms[i]
        if isinstance(arm, MetaTechnique):
            return arm.credit_name(config_hash)
        return self.labels[i]

    def _reset_history(self) -> None:
        """Forget what :meth:`_on_result` learnt (restore replays it)."""

    def restore(self, trials: Sequence[Trial]) -> None:
        """Resume: replay the stored trials through the credit rule, in order."""
        self._reset_history()
        self.best_value, self.best_config = math.inf, None
        for trial in trials:
            best_before = self.best_value
            self._record(trial)
            i = self._arm_by_label(trial.technique)
            if i is not None:
                self._on_result(i, self._credit(trial, best_before))
        for arm in self.arms:
            arm.restore(trials)
        if self.fill is not None:
            self.fill.restore(trials)

    def _tie_order(self, k: int) -> np.ndarray:
        return self.rng.permutation(k)
