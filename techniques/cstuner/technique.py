"""CsTuner: the csTuner pipeline as an ask/tell technique.

Sun et al., "csTuner: Scalable Auto-tuning Framework for Complex Stencil
Computation on GPUs", IEEE CLUSTER 2021, Section IV (Fig. 5):

1. Performance dataset (Section V-A2): ``samples`` (128) random valid
   settings, measured as ordinary trials of the run; the metrics a
   measurement returns (``Trial.metrics``, e.g. Nsight Compute counters)
   are kept with them.
2. Parameter grouping (Section IV-C): CVs of all ordered parameter pairs from
   the dataset (Eq. 1), Algorithm 1 on the deque (:mod:`.grouping`).
3. Search space sampling (Section IV-D): Algorithm 2 picks one metric per
   correlated collection (:mod:`.metrics`); per metric, the Eq. 3 PMNF model
   over the groups with the smallest RSE (:mod:`.pmnf`); the candidates whose
   predicted metrics pass the thresholds, ``sampling_ratio`` (10 %) of them,
   form the sampled space.  Without metrics, PMNF models the objective.
4. Evolutionary search with approximation (Section IV-E, Fig. 7): group by
   group, the others at the best so far, one gene over the group's
   re-indexed valid tuples, island sub-populations (2 x 16, crossover 0.8,
   mutation 0.005) or exhaustive search for small groups, approximate
   stopping by the CV of the top-n fitness (:mod:`.group_search`).  When
   the budget left cannot pay for the rest of a pass at those sizes (the
   paper's budget always can), each remaining group gets an equal share of
   it (``budget_share``), so the pass still visits every group.

The paper ends after one pass; a run with budget left goes on instead
(another pass from the new best, then, with ``continuation="descents"`` (the
default), more of the paper's own search: passes on a doubling sampled space
(Fig. 11) and new descents from the dataset's next-best settings; with
``"joint"`` the grouped GA over all groups on a doubling sampled space; then
unseen configurations at random): it is ``done`` only when every valid
configuration is known.  A PMNF model guides the sample only when it ranks
held-out dataset samples better than chance (``model_check``).  This and
every other difference from the paper is listed in docs/CSTUNER.md.
"""

from __future__ import annotations

import logging
import math
from typing import Any, ClassVar

import numpy as np

from ensemble.errors import TechniqueError
from techniques.base import BaseTechnique
from techniques.cstuner.domains import space_domains
from techniques.cstuner.group_search import (
    GroupReport,
    GroupSearch,
    takeover_generations,
)
from techniques.cstuner.grouping import algorithm1, dataset_cvs, sorted_deque
from techniques.cstuner.metrics import combine_metrics, pcc
from techniques.cstuner.pmnf import (
    PMNFModel,
    fit_pmnf,
    guided_sample,
    holdout_rank_test,
    numeric_matrix,
)
from techniques.cstuner.stopping import ApproximateStop

__all__ = ["CsTuner"]

_log = logging.getLogger("ensemble.techniques.cstuner")


class CsTuner(BaseTechnique):
    """csTuner: dataset, CV grouping, PMNF-guided sampling, grouped island GA with approximate stopping.

    Options (paper's values as defaults where it gives them): ``samples``
    (128; at most ``dataset_fraction`` = 10 % of a known budget, never fewer than
    the len(parameters) + 1 coefficients of Eq. 3), ``sampling_ratio``
    (0.1), ``num_collections`` (metric collections of Algorithm 2),
    ``population`` (16 per sub-population), ``subpopulations`` (2 in one
    process; one per rank under per-rank MPI), ``crossover_rate`` (0.8),
    ``mutation_rate`` (0.005 per bit), ``top_n`` and ``stop_threshold``
    (approximate stopping), ``max_generations`` per group, ``pool`` (random
    candidates when the space is too large to enumerate), ``transport``
    ("auto", "local" or "mpi"), ``continuation`` (what budget left after the
    paper's passes goes to: "descents", the default, or "joint"; replay screens
    in docs/CSTUNER.md), ``stagnation`` (the joint
    GA ends after that many generations without a new best; "takeover":
    the selection's takeover time for ``population``, 6 for 16; None: off),
    ``model_check`` (a PMNF model guides the sample only when its 5-fold
    held-out predictions rank the dataset better than chance at this
    one-sided significance level, 0.01; None: always, as the paper),
    ``budget_share`` (on: when the budget left cannot pay for the rest of a
    pass at the paper's sizes, each remaining group gets an equal share of
    it; off: the paper's sizes, the pass may end with the budget),
    ``startup_phase`` (what a bandit with ``startup=True`` lets this arm run
    first, uncredited: "dataset", or "pass" = the dataset and the first
    group-by-group pass, the paper's whole pipeline), ``constants_aside``
    (on: parameters with one value take no part in the pair CVs, Eq. 3 or
    the dataset's floor, and ride along in the last group; off, the
    default: they are grouped and modelled like the others; screened on
    2026-11-26 and not adopted, docs/CSTUNER.md), ``unguided`` ("ratio", the
    default: without a PMNF model that passes the check the sampled space is a
    random ``sampling_ratio`` of the candidates; "all": every candidate, since
    the ratio is the share a model keeps and no model chose it),
    ``dataset_floor`` ("parameters", the default: the dataset never falls
    below len(parameters) + 1 samples; "identifiable": below one more than
    the parameters with more than one value, the coefficients Eq. 3 can
    identify, as a constant column is collinear with the intercept),
    ``group_cost`` (what the budget share charges a group whose tuples
    outnumber the population: "generation", the default, one generation of
    every sub-population, the least it costs; "tuples": its K tuples, the
    most its search can ask for).  All three screened in session 15 and not
    adopted (docs/CSTUNER.md).  ``approximate_stop`` (whose top-n fitness
    the approximate stop of a GA group reads: "population", the default
    since session 16c, the n best individuals of a completed generation,
    copies included, the paper's GA, whose populations may then hold copies
    and children already measured, looked up rather than measured again; or
    "distinct", the code before, the n best distinct settings measured in
    the group, which a population of distinct never-measured genomes reaches
    only after walking through the group; docs/cstuner_results/h12_s16c_report.md).
    """

    name: ClassVar[str] = "CsTuner"
    summary: ClassVar[str] = ("csTuner (CLUSTER 2021): dataset, CV grouping, PMNF-guided sampling, "
                              "grouped island GA with approximate stopping")

    def __init__(
        self,
        *,
        seed: int | None = None,
        samples: int = 128,
        dataset_fraction: float = 0.1,
        sampling_ratio: float = 0.1,
        num_collections: int = 3,
        population: int = 16,
        subpopulations: int | None = None,
        crossover_rate: float = 0.8,
        mutation_rate: float = 0.005,
        top_n: int = 10,
        stop_threshold: float = 0.01,
        max_generations: int = 50,
        migration_interval: int = 1,
        pool: int = 20_000,
        enumerate_limit: int = 200_000,
        transport: str = "auto",
        continuation: str = "descents",
        stagnation: int | None | str = "takeover",
        model_check: float | None = 0.01,
        budget_share: bool = True,
        startup_phase: str = "dataset",
        constants_aside: bool = False,
        unguided: str = "ratio",
        dataset_floor: str = "parameters",
        group_cost: str = "generation",
        approximate_stop: str = "population",
    ) -> None:
        super().__init__(seed=seed)
        if samples < 1:
            raise TechniqueError(f"samples={samples}: the performance dataset needs at least 1 sample; "
                                 "the paper uses 128")
        if not 0.0 < dataset_fraction <= 1.0:
            raise TechniqueError(f"dataset_fraction={dataset_fraction}: give a fraction in (0, 1], e.g. 0.25")
        if not 0.0 < sampling_ratio <= 1.0:
            raise TechniqueError(f"sampling_ratio={sampling_ratio}: give a fraction in (0, 1], e.g. 0.1")
        if transport not in ("auto", "local", "mpi"):
            raise TechniqueError(f"transport={transport!r}: use 'auto', 'local' or 'mpi'")
        self.samples = samples
        self.dataset_fraction = dataset_fraction
        self.sampling_ratio = sampling_ratio
        self.num_collections = num_collections
        self.population = population
        self.subpopulations = subpopulations
        self.crossover_rate = crossover_rate
        self.mutation_rate = mutation_rate
        self.stop = ApproximateStop(top_n=top_n, threshold=stop_threshold)
        self.max_generations = max_generations
        self.migration_interval = migration_interval
        self.pool_size = pool
        self.enumerate_limit = enumerate_limit
        if continuation not in ("descents", "joint"):
            raise TechniqueError(f"continuation={continuation!r}: use 'descents' (passes on a doubled sampled "
                                 "space, then new descents from the dataset's next-best settings) or 'joint' "
                                 "(the joint grouped GA on a doubled sampled space)")
        self.continuation = continuation
        if stagnation == "takeover":
            stagnation = takeover_generations(population)
        if stagnation is not None and (not isinstance(stagnation, int) or stagnation < 1):
            raise TechniqueError(f"stagnation={stagnation!r}: give generations >= 1, 'takeover' (the selection's "
                                 "takeover time, the default) or None (the joint GA runs to max_generations)")
        self.stagnation = stagnation
        if model_check is not None and not 0.0 < model_check < 1.0:
            raise TechniqueError(f"model_check={model_check!r}: give a significance level in (0, 1), e.g. 0.01, "
                                 "or None to use every fitted PMNF model unchecked (the paper)")
        self.model_check = model_check
        for opt, val in (("budget_share", budget_share), ("constants_aside", constants_aside)):
            if not isinstance(val, bool):
                raise TechniqueError(f"{opt}={val!r}: give true or false (a string such as 'no' would "
                                     "silently read as true)")
        self.budget_share = budget_share
        if startup_phase not in ("dataset", "pass"):
            raise TechniqueError(f"startup_phase={startup_phase!r}: use 'dataset' (the performance dataset) or "
                                 "'pass' (the dataset and the first group-by-group pass)")
        self.startup_phase = startup_phase
        self.constants_aside = constants_aside
        if unguided not in ("ratio", "all"):
            raise TechniqueError(f"unguided={unguided!r}: use 'ratio' (without a usable PMNF model the sampled "
                                 "space is a random sampling_ratio of the candidates) or 'all' (every candidate)")
        self.unguided = unguided
        if dataset_floor not in ("parameters", "identifiable"):
            raise TechniqueError(f"dataset_floor={dataset_floor!r}: use 'parameters' (len(parameters) + 1 "
                                 "samples at least) or 'identifiable' (one more than the parameters with more "
                                 "than one value)")
        self.dataset_floor = dataset_floor
        if group_cost not in ("generation", "tuples"):
            raise TechniqueError(f"group_cost={group_cost!r}: use 'generation' (the budget share charges a GA "
                                 "group one generation of every sub-population) or 'tuples' (its tuples, the "
                                 "most new evaluations its search can ask for)")
        self.group_cost = group_cost
        if approximate_stop not in ("distinct", "population"):
            raise TechniqueError(f"approximate_stop={approximate_stop!r}: use 'distinct' (the CV of the top-n "
                                 "distinct settings measured in the group) or 'population' (the CV of the top-n "
                                 "individuals of a completed GA generation, copies included, as the paper's GA)")
        self.approximate_stop = approximate_stop
        self._proposed = 0
        self._startup_end: int | None = None
        self.shares: list[int] = []
        self.model_checks: dict[str, dict[str, float]] = {}
        self.restarts = 0
        self._starts: list[str] = []
        self._descent_base: dict[str, Any] | None = None
        self._descent_value = math.inf
        self.transport_name = transport
        self.phase = "dataset"
        self.groups: list[list[str]] = []
        self.cvs: dict[tuple[str, str], float] = {}
        self.models: dict[str, PMNFModel] = {}
        self.selected_metrics: list[str] = []
        self.fallbacks: list[str] = []
        self.reports: list[GroupReport] = []
        self.passes = 0
        self.ratio = sampling_ratio
        self._configs: dict[str, dict[str, Any]] = {}
        self._metrics: dict[str, dict[str, float]] = {}
        self._dataset: list[dict[str, Any]] = []
        self._dataset_hashes: set[str] = set()
        self._joint_round = 0
        self._restart_at = max(0, population // 2 - 1)   # the first round took the dataset's best
        self._outstanding: set[str] = set()
        self._search: GroupSearch | None = None
        self._search_hashes: dict[str, tuple[int, ...]] = {}
        self._group_index = -1
        self._pass_start_best = math.inf
        self._pass_new = 0
        self._pool: list[dict[str, Any]] = []
        self._pool_exhaustive = False
        self._order: np.ndarray = np.arange(0)
        self._sampled: list[dict[str, Any]] = []
        self._sweep_at = 0

    # -- binding ---------------------------------------------------------------
    def _on_bind(self) -> None:
        self.domains = space_domains(self.space)
        self.names = list(self.domains)
        self.constants = [n for n in self.names if self.constants_aside and len(self.domains[n]) <= 1]
        self.free = [n for n in self.names if n not in self.constants]
        n = self.samples
        if self.budget:
            # Eq. 3 with one group per parameter has len(free) + 1 coefficients: fewer
            # samples cannot fit it, so a small budget's share never goes below that.
            # With dataset_floor="identifiable" a parameter with one value is not counted: its
            # column is constant, collinear with c_0, so it adds no coefficient Eq. 3 can fit.
            counted = (self.free if self.dataset_floor == "parameters"
                       else [p for p in self.free if len(self.domains[p]) > 1])
            floor = min(n, len(counted) + 1)
            n = min(self.budget, max(floor, min(n, int(self.budget * self.dataset_fraction))))
        self.n_samples = n
        self._dataset = [dict(c) for c in self.space.sample(self.rng, n)]
        self._islands, self._n_islands, self._transport = self._choose_islands()

    def _choose_islands(self) -> tuple[list[int], int, Any]:
        from techniques.island_ga import LocalRing, _mpi_size, _per_rank_mpi

        if self.transport_name == "mpi" or (self.transport_name == "auto" and _per_rank_mpi()):
            from ensemble.mpi import MPIRing

            ring = MPIRing()
            return [ring.rank], ring.size, ring
        k = self.subpopulations or (_mpi_size() if _mpi_size() > 1 else 2)
        return list(range(k)), k, LocalRing()

    # -- bookkeeping ---------------------------------------------------------------
    def _record(self, trial: Any) -> bool:
        self._configs[trial.config_hash] = dict(trial.config)
        metrics = getattr(trial, "metrics", None)
        if metrics:
            self._metrics[trial.config_hash] = {k: float(v) for k, v in metrics.items()
                                                if isinstance(v, (int, float)) and not isinstance(v, bool)}
        improved = super()._record(trial)
        if not trial.duplicate and self.phase != "dataset":
            self._pass_new += 1
        return improved

    @property
    def done(self) -> bool:
        return self.phase == "done"

    @property
    def startup_trials(self) -> int:
        """What a bandit with ``startup=True`` asks of this arm first, uncredited.

        "dataset": the performance dataset's size.  "pass": the dataset and the
        first group-by-group pass, the paper's pipeline as one unit; its
        length is not known in advance, so while the pass runs the count stays
        one ahead of the proposals made, and it is frozen when the pass ends.
        """
        n = int(getattr(self, "n_samples", 0))
        if self.startup_phase == "dataset":
            return n
        if self._startup_end is not None:
            return self._startup_end
        if self.phase in ("dataset", "groups"):
            return max(n, self._proposed + 1)
        return max(n, self._proposed)

    # -- ask ------------------------------------------------------------------
    def propose(self, n: int) -> list[dict[str, Any]]:
        self._require_bound()
        out: list[dict[str, Any]] = []
        # Groups that settle at once (one known tuple) and passes that find nothing new
        # advance the state without a proposal; the bound only guards against a bug.
        for _ in range(50 * len(self.names) + 200):
            if len(out) >= n or self.phase == "done":
                break
            if self.phase == "dataset":
                out.extend(self._from_dataset(n - len(out)))
                if self._dataset or self._outstanding or out:
                    break
                self._build_models()
                continue
            if self.phase in ("groups", "joint"):
                got = self._from_group(n - len(out))
                out.extend(got)
                if not got and self._search is not None and self._search.pending():
                    break                             # waiting for results of this generation
                continue
            if self.phase == "sweep":
                out.extend(self._from_sweep(n - len(out)))
                break
        self._proposed += len(out)
        return out

    def _from_dataset(self, n: int) -> list[dict[str, Any]]:
        """Random samples until the dataset holds ``n_samples`` results.

        Results of other techniques (an ensemble's arms) count too, so an arm
        that joins a run late does not pay for a dataset the run already has.
        """
        out: list[dict[str, Any]] = []
        if len(self._records()) + len(self._outstanding) >= self.n_samples:
            self._dataset = []
        while self._dataset and len(out) < n:
            cfg = self._dataset.pop(0)
            h = self.hash(cfg)
            if h in self.known or h in self._outstanding:
                continue
            self._outstanding.add(h)
            out.append(cfg)
        return out

    def _from_group(self, n: int) -> list[dict[str, Any]]:
        search = self._search
        if search is None or search.done:
            if self.phase == "joint":
                self._next_joint()
            else:
                self._next_group()
            return []
        got = search.ask(n)
        out = []
        for index, cfg in got:
            h = self.hash(cfg)
            self._search_hashes[h] = index
            out.append(cfg)
        if not got and not search.pending() and not search.done:
            search._finish("stalled", 0)
        return out

    def _from_sweep(self, n: int) -> list[dict[str, Any]]:
        """Unseen valid configurations, at random: the run is never ended early."""
        out: list[dict[str, Any]] = []
        while len(out) < n and self._sweep_at < len(self._pool):
            cfg = self._pool[self._sweep_at]
            self._sweep_at += 1
            h = self.hash(cfg)
            if h not in self.known and h not in self._outstanding:
                self._outstanding.add(h)
                out.append(cfg)
        tries = 0
        while len(out) < n and tries < 50:
            tries += 1
            cfg = dict(self.space.sample(self.rng, 1)[0])
            h = self.hash(cfg)
            if h not in self.known and h not in self._outstanding:
                self._outstanding.add(h)
                out.append(cfg)
        if not out and not self._outstanding and self._pool_exhaustive and self.exhausted():
            self.phase = "done"
        return out

    # -- the model stage ---------------------------------------------------------
    def _records(self) -> list[tuple[dict[str, Any], float]]:
        return [(self._configs[h], v) for h, v in self.known.items() if h in self._configs]

    def _build_models(self) -> None:
        """Sections IV-C and IV-D on the dataset: groups, metrics, PMNF, the sampled space."""
        records = self._records()
        self._dataset_hashes = {h for h in self.known if h in self._configs}
        finite = [(c, v) for c, v in records if math.isfinite(v)]
        if len(self.free) < 2:
            self.groups = [list(self.names)]
            self.fallbacks.append("one parameter: a single group, no pair CVs")
        elif not finite:
            self.groups = [[n] for n in self.free]
            self.fallbacks.append("every dataset sample failed: one group per parameter, unguided sampling")
            _log.warning("CsTuner: every one of the %d dataset samples failed; grouping and PMNF "
                         "fall back to one group per parameter and an unguided sample", len(records))
        else:
            self.cvs = dataset_cvs({n: self.domains[n] for n in self.free}, finite)
            self.groups = algorithm1(sorted_deque(self.cvs, self.free), self.free)
            if len(finite) < len(self.free):
                self.fallbacks.append(f"{len(finite)} successful samples for {len(self.free)} parameters: "
                                      "CVs rest on few settings")
        if self.constants and len(self.free) >= 2:
            # a parameter with one value has no CV to compute (Eq. 1 of one setting is 0, which
            # Algorithm 1 would read as the strongest correlation) and no coefficient to fit (its
            # log2 factor can be 0 and erase a whole group's Eq. 3 term); it only rides along
            self.groups[-1] = [*self.groups[-1], *self.constants]
        self._make_pool()
        self._fit(finite)
        self._resample()
        self.phase = "groups"
        ranked = sorted((v, h) for h, v in self.known.items() if h in self._configs and math.isfinite(v))
        self._starts = [h for _, h in ranked[1:]]
        if self.best_config is not None:
            self._descent_base, self._descent_value = dict(self.best_config), self.best_value
        self._pass_start_best = self.best_value
        self._pass_new = 0
        self._group_index = -1
        _log.info("CsTuner: %d dataset samples, groups %s, metrics %s, models %s, sampled space %d of %d",
                  len(records), self.groups, self.selected_metrics,
                  {m: (mod.i, mod.j) for m, mod in self.models.items()}, len(self._sampled), len(self._pool))
        self._next_group()

    def _make_pool(self) -> None:
        """The candidate settings: every valid one when countable, else a random pool."""
        count = None
        if self.space.size <= 10 * self.enumerate_limit:
            count = self.space.count_valid(limit=self.enumerate_limit)
        if count is not None and count <= self.enumerate_limit:
            self._pool = [dict(c) for c in self.space.enumerate_valid(limit=self.enumerate_limit)]
            self._pool_exhaustive = True
        else:
            seen: dict[str, dict[str, Any]] = {}
            for c in self.space.sample(self.rng, self.pool_size):
                seen.setdefault(self.hash(c), dict(c))
            self._pool = list(seen.values())
        perm = self.rng.permutation(len(self._pool))
        self._pool = [self._pool[i] for i in perm]

    def _fit(self, finite: list[tuple[dict[str, Any], float]]) -> None:
        """PMNF per selected metric (Algorithm 2), or on the objective without metrics."""
        self.models = {}
        self._lower: dict[str, bool] = {}
        if not finite:
            return
        col = {n: i for i, n in enumerate(self.names)}
        groups = [idx for idx in ([col[n] for n in g if n not in self.constants] for g in self.groups) if idx]
        if not groups:
            self.fallbacks.append("every parameter has one value: nothing for Eq. 3 to model")
            return
        hashes = [h for h, v in self.known.items() if h in self._configs and math.isfinite(v)]
        with_metrics = [h for h in hashes if h in self._metrics]
        targets: dict[str, list[float]] = {}
        rows = hashes
        if len(with_metrics) >= max(3, len(hashes) // 2):
            names = sorted(set.intersection(*(set(self._metrics[h]) for h in with_metrics)) - {"time"})
            table = {m: [self._metrics[h][m] for h in with_metrics] for m in names}
            time = [self.known[h] for h in with_metrics]
            self.selected_metrics = combine_metrics(table, time, self.num_collections)
            if self.selected_metrics:
                rows = with_metrics
                for m in self.selected_metrics:
                    targets[m] = table[m]
                    self._lower[m] = pcc(table[m], time) >= 0.0
        if not targets:
            targets["objective"] = [self.known[h] for h in hashes]
            self._lower["objective"] = True
        x = numeric_matrix([self._configs[h] for h in rows], self.names, self.domains)
        for m, y in targets.items():
            model = fit_pmnf(x, y, groups)
            if model is None:
                continue
            if self.model_check:
                rho, p = holdout_rank_test(x, y, groups, self.rng)
                self.model_checks[m] = {"rho": rho, "p": p}
                if not p < self.model_check:
                    self.fallbacks.append(f"PMNF model of {m}: held-out rank correlation {rho:.2f} "
                                          f"(one-sided p {p:.2g}) is not better than chance: not used")
                    continue
            self.models[m] = model
        if not self.models and self.model_checks:
            _log.info("CsTuner: no PMNF model ranks held-out samples better than chance; the sampled "
                      "space is a random %.0f %% of the candidates", 100 * self.ratio)
        elif not self.models:
            self.fallbacks.append(f"{len(rows)} successful samples cannot fit Eq. 3's {len(groups) + 1} "
                                  "coefficients: unguided sampling")
            _log.warning("CsTuner: too few successful samples (%d) for the PMNF models; the sampled "
                         "space is a random %.0f %% of the candidates", len(rows), 100 * self.ratio)

    def _resample(self) -> None:
        """The sampled space at the current ratio: guided by the models, else at random."""
        if self.models and not hasattr(self, "_pred"):
            x = numeric_matrix(self._pool, self.names, self.domains)
            self._pred = {m: mod.predict(x) for m, mod in self.models.items()}
        if self.models:
            idx = guided_sample(self._pred, {m: self._lower[m] for m in self._pred}, self.ratio)
        elif self.unguided == "all":
            # the paper's sampling ratio is the share its models keep; without a model that
            # ranks the candidates there is nothing to choose a share by, so none is dropped
            self.ratio = 1.0
            idx = np.arange(len(self._pool))
        else:
            idx = np.arange(max(1, math.ceil(self.ratio * len(self._pool))))
        self._sampled = [self._pool[int(i)] for i in idx]

    # -- group by group --------------------------------------------------------
    def _group_tuples(self, group: list[str], base: dict[str, Any] | None) -> list[tuple[Any, ...]]:
        """The group's distinct tuples in the sampled space (and the base's, the best so far).

        With ``base`` only those that make a valid configuration with it (Fig. 7's
        valid tuples); without (the joint GA) all of them, validity being checked
        per individual.
        """
        out: list[tuple[Any, ...]] = []
        seen: set[Any] = set()
        known = [self._configs[h] for h, v in self.known.items() if h in self._configs and math.isfinite(v)
                 and v <= self.best_value]
        for cfg in [*known, *([base] if base else []), *self._sampled]:
            t = tuple(cfg[n] for n in group)
            k = tuple(tuple(v) if isinstance(v, list) else v for v in t)
            if k in seen:
                continue
            seen.add(k)
            if base is not None:
                trial = dict(base)
                trial.update(zip(group, t))
                if not self.space.is_valid(trial):
                    continue
            out.append(t)
        return out

    def _next_group(self) -> None:
        if self._search is not None:
            rep = self._search.report()
            if rep is not None and (not self.reports or self.reports[-1] is not rep):
                self.reports.append(rep)
                _log.info("CsTuner group %s: %s (%s), %d of %d tuples, %d generation(s), best %.6g",
                          "+".join(rep.group), rep.mode, rep.reason, rep.evaluations, rep.tuples,
                          rep.generations, rep.best_value)
        if self._search is not None:
            found, value = self._search.best()
            if value < self._descent_value:
                self._descent_base, self._descent_value = dict(found), value
        if (self.continuation == "joint" or self.restarts == 0) and self.best_value < self._descent_value \
                and self.best_config is not None:
            # the single descent continues from the run's best, an ensemble's other arms' included
            self._descent_base, self._descent_value = dict(self.best_config), self.best_value
        self._group_index += 1
        if self._group_index >= len(self.groups):
            self._end_pass()
            if self.phase != "groups":
                self._search = None
                return
            self._group_index = 0
        group = self.groups[self._group_index]
        if self._descent_base is None:
            self._descent_base = dict(self.best_config) if self.best_config is not None else dict(self._pool[0])
        base = dict(self._descent_base)
        tuples = self._group_tuples(group, base)
        self._search_hashes = {}
        self._search = GroupSearch(
            group, tuples, base, self.rng,
            population=self.population, islands=self._islands, n_islands=self._n_islands,
            transport=self._transport, crossover_rate=self.crossover_rate,
            mutation_rate=self.mutation_rate, migration_interval=self.migration_interval,
            stop=self.stop, max_generations=self.max_generations, known=self.value_of,
            limit=self._group_share(base, len(tuples)), approximate=self.approximate_stop,
        )

    def _group_share(self, base: dict[str, Any], tuples: int) -> int | None:
        """Evaluations the current group may use when the budget cannot pay for the rest of the pass.

        At the paper's sizes a group costs at least its tuples (exhaustive,
        K <= population) or one generation of every sub-population.  When the
        budget left is below that sum over the pass's remaining groups (e.g.
        convolution_W7800: 26 evaluations after the dataset for 5-7 groups,
        the first of them 16 tuples), the pass would end inside its first
        groups and never reach the others; an equal share per remaining group
        keeps the paper's group-by-group descent over every group instead.
        Shares are recomputed at each group, so what a group leaves unused
        goes to the ones after it.  None: no limit (budget unknown, the
        option off, or the budget pays for the pass).
        """
        if not self.budget_share or not self.budget:
            return None
        left = len(self.groups) - self._group_index
        remaining = self.budget - len(self.known) - len(self._outstanding)
        generation = self.population * self._n_islands
        if self.group_cost == "generation" and remaining >= left * generation:
            return None                              # cheap test first: the pass fits at any K

        def charge(k: int) -> int:
            # group_cost="tuples": a GA group may ask for each of its K tuples once, so the pass is
            # paid for only when the budget covers them all, not just one generation of each group
            return k if k <= self.population or self.group_cost == "tuples" else generation

        cost = charge(tuples)
        for g in self.groups[self._group_index + 1:]:
            cost += charge(len(self._group_tuples(g, base)))
        if remaining >= cost:
            return None
        share = max(1, remaining // left)
        self.shares.append(share)
        return share

    def _end_pass(self) -> None:
        """After the last group: again from the new best while that improves, then the joint GA."""
        self.passes += 1
        if self._startup_end is None:
            self._startup_end = max(int(getattr(self, "n_samples", 0)), self._proposed)
        improved = self._descent_value < self._pass_start_best
        self._pass_start_best, self._pass_new = self._descent_value, 0
        if improved:
            return                                   # again from the new best
        if self.continuation == "descents" and self.ratio < 1.0:
            self.ratio = min(1.0, 2.0 * self.ratio)  # Fig. 11: a wider sample, the same passes
            self._resample()
            return
        if self.continuation == "descents" and self._restart():
            return
        self.phase = "joint"
        self._search = None

    def _restart(self) -> bool:
        """A new descent (the paper's group-by-group search) from the dataset's next-best setting.

        The dataset is a random sample of the space, so its good settings lie
        in different basins; a descent from each, best first, spends the
        budget the paper's single descent leaves on the same search.
        """
        while self._starts:
            h = self._starts.pop(0)
            value = self.known.get(h)
            if value is None or not math.isfinite(value) or h not in self._configs:
                continue
            self._descent_base, self._descent_value = dict(self._configs[h]), value
            self._pass_start_best = value
            self.restarts += 1
            if self.ratio != self.sampling_ratio:
                self.ratio = self.sampling_ratio     # each descent narrows first, as the paper's
                self._resample()
            return True
        return False

    def _next_joint(self) -> None:
        """The grouped GA over every group at once (one gene per group) on the sampled space.

        Budget left after the group-by-group passes settle goes here; each time
        it settles, the sampled space is doubled (up to all candidates); once it
        settles on all of them without a new evaluation, the sweep takes over.
        """
        if self._search is not None:
            rep = self._search.report()
            if rep is not None:
                self.reports.append(rep)
                _log.info("CsTuner joint GA at %.0f %%: %s after %d generation(s), best %.6g",
                          100 * self.ratio, rep.reason, rep.generations, rep.best_value)
            new = self._pass_new
            self._pass_new = 0
            if self.ratio >= 1.0 and new == 0:
                self.phase = "sweep"
                self._search = None
                return
            if self.ratio < 1.0:
                self.ratio = min(1.0, 2.0 * self.ratio)
                self._resample()
        seeds, seed_base = self._joint_seeds()
        # the seeds' own tuples join each gene's list: a dataset sample outside the sampled space is a start too
        tuples = [self._group_tuples(g, None) + [tuple(c[n] for n in g) for c in seeds] for g in self.groups]
        base = dict(self.best_config) if self.best_config is not None else dict(self._pool[0])
        self._search_hashes = {}
        self._pass_new = 0
        self._search = GroupSearch(
            self.groups, tuples, base, self.rng, population=self.population, islands=self._islands,
            n_islands=self._n_islands, transport=self._transport, crossover_rate=self.crossover_rate,
            mutation_rate=self.mutation_rate, migration_interval=self.migration_interval, stop=self.stop,
            max_generations=self.max_generations, known=self.value_of, is_valid=self.space.is_valid,
            seeds=seeds, stagnation=self.stagnation, seed_base=seed_base, approximate=self.approximate_stop,
        )

    def _joint_seeds(self) -> tuple[list[dict[str, Any]], bool]:
        """The joint GA's first individuals, and whether the incumbent is among them.

        Even rounds (the first joint GA, and every second one after it) start
        around the incumbent: it and the dataset's best samples.  Odd rounds
        restart away from it: the dataset's next-best samples, in turn,
        without the incumbent.  Why: a GA seeded with the best known settings
        (after the group passes, the incumbent's neighbours, one basin) stays
        in that basin (docs/CSTUNER.md, convolution_A100/A6000); the dataset
        is a random sample of the space, so its good settings lie in
        different basins.  Alternating keeps the refinement around the
        incumbent and adds a restart elsewhere; half the population comes
        from the seeds, the rest is drawn from the sampled space by the GA.
        """
        ranked = [h for _, h in sorted((v, h) for h, v in self.known.items()
                                       if h in self._dataset_hashes and h in self._configs and math.isfinite(v))]
        half = max(1, self.population // 2)
        around = self._joint_round % 2 == 0 or self.best_config is None
        self._joint_round += 1
        if around:
            seeds = [dict(self.best_config)] if self.best_config is not None else []
            return seeds + [self._configs[h] for h in ranked[: half - len(seeds)]], True
        if not ranked:
            return [], False
        start = (self._restart_at % len(ranked))
        self._restart_at += half
        picked = (ranked[start:] + ranked[:start])[:half]
        assert self.best_config is not None  # `around` holds whenever there is no incumbent
        best = self.hash(self.best_config)
        return [self._configs[h] for h in picked if h != best], False

    # -- tell -----------------------------------------------------------------
    def _observe(self, trial: Any) -> None:
        self._outstanding.discard(trial.config_hash)
        self._tell_search(trial)

    def _observe_foreign(self, trial: Any) -> None:
        self._tell_search(trial)

    def _tell_search(self, trial: Any) -> None:
        index = self._search_hashes.pop(trial.config_hash, None)
        if index is not None and self._search is not None:
            self._search.tell(index, trial.value)

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        state.update({
            "phase": self.phase, "groups": self.groups, "passes": self.passes, "restarts": self.restarts,
            "sampling_ratio": self.ratio, "metrics": self.selected_metrics,
            "models": {m: {"i": mod.i, "j": mod.j, "rse": mod.rse} for m, mod in self.models.items()},
            "model_checks": self.model_checks, "budget_shares": self.shares[-50:],
            "fallbacks": self.fallbacks, "reports": [r.to_json() for r in self.reports[-50:]],
        })
        return state
