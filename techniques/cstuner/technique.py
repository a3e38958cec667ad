"""CsTuner: sample, group parameters by interaction, tune group by group.

The pipeline of Sun et al. (csTuner, IEEE CLUSTER 2021) as an ask/tell
technique: (1) a random sample of the space (plus everything the run already
knows) gives the best configuration so far; (2) probes around it measure, for
each pair of parameters, how the best value of one moves as the other varies,
and the deque algorithm groups interacting parameters
(:mod:`techniques.cstuner.grouping`); (3) each group is searched with the
others fixed at the best so far, by a GA on its re-indexed valid values that
stops approximately when its top fitness values agree, or exhaustively when
it is small (:mod:`techniques.cstuner.group_search`).  After the last group
``done`` turns True and an AUC bandit stops handing it trials.

The PMNF regression-guided sampling of the paper is not implemented: the
initial sample is uniform (see docs/MPI.md).
"""

from __future__ import annotations

import logging
import math
from typing import Any, ClassVar

from techniques.base import BaseTechnique
from techniques.cstuner.domains import space_domains
from techniques.cstuner.group_search import GroupReport, GroupSearch
from techniques.cstuner.grouping import deque_grouping, interaction_cvs, probe_configs
from techniques.cstuner.stopping import ApproximateStop

__all__ = ["CsTuner"]

_log = logging.getLogger("ensemble.techniques.cstuner")


class CsTuner(BaseTechnique):
    """csTuner's grouped GA with approximate stopping.

    Options: ``samples`` (initial random sample, default 2 x parameters, at
    least 10), ``probe_budget`` (evaluations for the pairwise probes, at
    most a third of the run's budget when it has one),
    ``cv_threshold`` and ``max_group`` (grouping), ``population`` and
    ``generations`` (the fixed GA budget per group), ``top_n`` and
    ``stop_threshold`` (approximate stopping), ``rounds`` (passes over the groups).
    """

    name: ClassVar[str] = "CsTuner"
    summary: ClassVar[str] = "csTuner: CV parameter grouping, group-by-group GA with approximate stopping"

    def __init__(
        self,
        *,
        seed: int | None = None,
        samples: int | None = None,
        probe_budget: int = 300,
        cv_threshold: float = 0.1,
        max_group: int = 4,
        population: int = 20,
        generations: int = 10,
        top_n: int = 10,
        stop_threshold: float = 0.01,
        rounds: int = 1,
    ) -> None:
        super().__init__(seed=seed)
        self.samples = samples
        self.probe_budget = probe_budget
        self.cv_threshold = cv_threshold
        self.max_group = max_group
        self.population = population
        self.generations = generations
        self.stop = ApproximateStop(top_n=top_n, threshold=stop_threshold)
        self.rounds = rounds
        self.phase = "sample"
        self.groups: list[list[str]] = []
        self.cvs: dict[tuple[str, str], float] = {}
        self.reports: list[GroupReport] = []
        self._configs: dict[str, dict[str, Any]] = {}     # hash -> config of every known result
        self._queue: list[dict[str, Any]] = []            # sample / probe configs not yet proposed
        self._outstanding: set[str] = set()
        self._search: GroupSearch | None = None
        self._group_index = 0
        self._probe_base: dict[str, Any] | None = None

    def _on_bind(self) -> None:
        self.domains = space_domains(self.space)
        self.names = list(self.domains)
        n = self.samples if self.samples is not None else max(10, 2 * len(self.names))
        self._queue = [dict(c) for c in self.space.sample(self.rng, n)]

    # -- bookkeeping -----------------------------------------------------------
    def _record(self, trial: Any) -> bool:
        self._configs[trial.config_hash] = dict(trial.config)
        return super()._record(trial)

    @property
    def done(self) -> bool:
        return self.phase == "done"

    def _is_valid(self, cfg: dict[str, Any]) -> bool:
        return bool(self.space.is_valid(cfg))

    # -- ask ------------------------------------------------------------------
    def propose(self, n: int) -> list[dict[str, Any]]:
        self._require_bound()
        for _ in range(len(self.names) + 3):
            if self.phase in ("sample", "probe"):
                out = self._from_queue(n)
                if out or self._outstanding:
                    return out
                self._advance_phase()
                continue
            if self.phase == "groups":
                assert self._search is not None
                out = self._search.ask(n)
                for cfg in out:
                    self._outstanding.add(self.hash(cfg))
                if out or not self._search.done:
                    return out
                self._next_group()
                continue
            return []
        return []

    def _from_queue(self, n: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        while self._queue and len(out) < n:
            cfg = self._queue.pop(0)
            h = self.hash(cfg)
            if h in self.known or h in self._outstanding:
                continue
            self._outstanding.add(h)
            out.append(cfg)
        return out

    def _advance_phase(self) -> None:
        if self.phase == "sample":
            self.phase = "probe"
            self._queue = self._probes()
        elif self.phase == "probe":
            self._make_groups()
            self.phase = "groups"
            self._group_index = -1
            self._next_group()

    def _base(self) -> dict[str, Any]:
        if self.best_config is not None:
            return dict(self.best_config)
        return dict(self.space.sample(self.rng, 1)[0])

    def _probes(self) -> list[dict[str, Any]]:
        pairs = len(self.names) * (len(self.names) - 1) // 2
        if pairs == 0:
            return []
        probes = self.probe_budget
        if self.budget:
            # grouping is an investment: at most a third of a known run budget
            probes = min(probes, self.budget // 3)
        per_param = max(2, int(math.sqrt(probes / pairs)))
        base = self._probe_base = self._base()
        out: list[dict[str, Any]] = []
        for i, p in enumerate(self.names):
            for q in self.names[i + 1:]:
                out.extend(c for c in probe_configs(self.domains, base, p, q, per_param) if self._is_valid(c))
        return out

    def _make_groups(self) -> None:
        records = [(self._configs[h], v) for h, v in self.known.items() if h in self._configs]
        # CVs are read around the point the probes were built on, not the (maybe newer) best.
        self.cvs = interaction_cvs(self.domains, records, self._probe_base or self._base())
        self.groups = deque_grouping(self.cvs, self.names, threshold=self.cv_threshold,
                                     max_group=self.max_group)

    def _next_group(self) -> None:
        if self._search is not None and self._search.report() is not None:
            rep = self._search.report()
            if rep is not None and (not self.reports or self.reports[-1] is not rep):
                self.reports.append(rep)
                _log.info(
                    "CsTuner group %s: %s (%s) after %d generation(s), %d evaluations of a fixed "
                    "budget of %d, %d saved; best %.6g", "+".join(rep.group), rep.mode, rep.reason,
                    rep.generations, rep.evaluations, rep.budget, rep.saved, rep.best_value)
        self._group_index += 1
        if self._group_index >= len(self.groups) * self.rounds:
            self.phase = "done"
            self._search = None
            return
        group = self.groups[self._group_index % len(self.groups)]
        self._search = GroupSearch(
            group, self.domains, self._base(), self._is_valid, self.rng,
            population=self.population, generations=self.generations, stop=self.stop,
            known=self.value_of,
        )

    # -- tell -----------------------------------------------------------------
    def _observe(self, trial: Any) -> None:
        self._outstanding.discard(trial.config_hash)
        search = self._search if self.phase == "groups" else None
        if search is not None and all(trial.config.get(n) == search.base.get(n)
                                      for n in self.names if n not in search.group):
            search.tell(trial.config, trial.value)

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state.update({
            "phase": self.phase,
            "groups": self.groups,
            "reports": [r.to_json() for r in self.reports],
            "saved": sum(r.saved for r in self.reports),
        })
        return state
