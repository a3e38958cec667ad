"""Bayesian optimization with a Gaussian process, after Willemsen et al. (PMBS 2021).

Why: the score of Willemsen et al. (FGCS 2024) averages over the whole
budget axis, so a tuner must find good configurations early; a GP learns
from every result at once and, on spaces of a few thousand valid points,
can rank *every* unevaluated configuration at each step.  The recipe is
Willemsen, van Nieuwpoort & van Werkhoven, "Bayesian optimization for
auto-tuning GPU kernels" (PMBS 2021, arXiv:2111.14991):

* inputs: each parameter's value index scaled to [0, 1] (the space's
  unit-cube view, ``space.to_unit``);
* initial design: 20 points (the paper's default; ``initial_cap``, which the
  default ensemble sets to 10), a Latin hypercube snapped
  to valid configurations, the best of several draws by the maximin
  criterion (Morris & Mitchell, J. Stat. Plan. Inference 1995); here at most
  a fifth of the budget, so a short budget is not spent on the design alone;
* failed configurations: as in the paper, they are left out of the GP and
  never proposed again (no penalty value distorts the GP's smoothness);
  unlike the paper, a classifier learns where they lie
  (:mod:`techniques.feasibility`, shared with the ensemble's other arms) and
  the acquisition is EI x P(success), ranked among the candidates with
  P >= 0.5 except in a share ``explore_failures`` (0.05) of the picks
  (docs/TECHNIQUES.md, "Learning where configurations fail");
* model: GP with a Matern 5/2 ARD kernel on the log objective, standardized
  (:mod:`techniques.gaussian_process`); hyperparameters by maximum marginal
  likelihood, refitted when the number of observations has grown by a
  factor ``refit_growth`` (1.25) since the last fit, so about
  log(n)/log(1.25) fits per run; between fits the posterior is updated in
  O(m N) per result;
* acquisition: expected improvement (Jones, Schonlau & Welch, J. Global
  Optim. 1998) with an optional margin ``xi`` (0 by default), measured
  against the *plug-in* incumbent: the lowest posterior mean at an
  evaluated configuration, not the lowest measured value (Picheny,
  Wagner & Ginsbourger, "A benchmark of kriging-based infill criteria for
  noisy optimization", Struct. Multidisc. Optim. 2013).  Run times are
  noisy and the GP fits a noise term; against the luckiest measurement, EI
  near the best region is understated, and the search leaves the top of
  the space just where the last percent is won.  Replayed at 10 seeds the
  plug-in scored 0.549 against 0.495 (docs/TECHNIQUES.md, round 4);
  ``incumbent="observed"`` restores the measured best;
* candidates: every valid unevaluated configuration when the space has at
  most ``enumerate_limit`` (50 000) valid points (enumerated once), otherwise
  ``pool`` uniform valid samples plus neighbours, mutations and small
  perturbations of the best few, refreshed when the best improves or the
  model is refitted;
* cost: inside an ensemble the model is worth its compute only while
  evaluations cost more than it does.  The technique times its own work
  (proposals and posterior updates) and compares it with the seconds the
  evaluations it has seen cost (``Trial.cost``: measured, or the replay's
  recorded cost).  With ``compute_share`` set (the default ensemble sets a
  quarter), once its compute exceeds that share, and at least
  ``min_compute`` seconds (0.25), it retires: ``done`` turns True, the
  bandit gives its trials to the other arms, and it stops updating.  Alone
  (``-t BayesOpt``) it never retires by default: retiring would end the run.  On a
  GPU kernel that costs a second to build and time this never happens in a
  run of a few thousand evaluations; on a microsecond objective it happens
  within the initial design, so the default ensemble keeps the framework's
  cost per trial low.  Trials without a cost (the in-memory harness, ask/tell
  without one) never retire it, so seeded runs there stay reproducible.
* batches: ``propose(n > 1)`` uses the kriging believer (Ginsbourger, Le
  Riche & Carraro, "Kriging is well-suited to parallelize optimization",
  2010): each pick is added to the GP with its predicted mean as a fantasy
  value, so the next pick goes elsewhere; the measured value replaces it.
  A fantasy whose configuration then fails stays until the next refit.
"""

from __future__ import annotations

import logging
import math
import time
from collections import deque
from collections.abc import Iterator
from typing import Any, ClassVar

import numpy as np
from scipy.special import ndtr

from ensemble.errors import InfeasibleSpaceError, TechniqueError
from ensemble.technique import Trial
from techniques.base import FILTER_THRESHOLD, BaseTechnique
from techniques.gaussian_process import (
    LENGTHSCALE_PRIORS,
    GPHyper,
    OneBlasThread,
    PoolPosterior,
    fit_hyperparameters,
    fit_hyperparameters_steps,
)
from techniques.gp_features import FEATURES, divisibility_columns

__all__ = ["BayesOpt", "expected_improvement_fast"]

#: failures_in_gp='common': the share of the initial design that must fail for failures to enter the GP.
#: Chosen, before measuring, between the failure shares of the recorded spaces (9-11 %) and of their whole
#: grids (50-62 %). Measured (docs/TECHNIQUES.md, "Failures in the GP"): it does not separate them
#: reliably, because the initial design is space-filling and finds the failing corners more often than
#: their share (conv A6000 as recorded: triggered in 3 of 10 seeds). An option, not the default.
FAILURES_COMMON = 0.3

_log = logging.getLogger(__name__)

#: results over which the model's compute per result is compared with the gap between results; with
#: ``spread_refits``, four rounds of the workers (``4 * workers``) where that is more, up to MAX_WINDOW
WINDOW = 32
MAX_WINDOW = 512


def expected_improvement_fast(mu: np.ndarray, sigma: np.ndarray, best: float, xi: float = 0.0) -> np.ndarray:
    """Expected improvement below ``best`` (Jones et al. 1998), vectorised with SciPy's normal CDF.

    Same formula as :func:`techniques.surrogate.expected_improvement`; that one
    calls ``math.erf`` per element, too slow for 10^4 candidates per step.
    """
    sigma = np.maximum(np.asarray(sigma, dtype=float), 1e-12)
    imp = best - np.asarray(mu, dtype=float) - xi
    z = imp / sigma
    return np.maximum(imp * ndtr(z) + sigma * np.exp(-0.5 * z * z) / math.sqrt(2.0 * math.pi), 0.0)


class BayesOpt(BaseTechnique):
    """GP (Matern 5/2, log objective) + expected improvement over every valid unevaluated configuration.

    Options: ``initial`` (initial design size; default ``initial_cap``, at
    most a fifth of the budget and at least 5), ``initial_cap`` (20, the
    paper's; the default ensemble uses 10), ``xi`` (EI margin in
    standardized log units, 0.0), ``refit_growth`` (refit hyperparameters when
    the observations grew by this factor, 1.25), ``enumerate_limit`` (50 000),
    ``pool`` (uniform candidates on larger spaces, 2000), ``incumbents`` (best
    configurations that get local candidates there, 5), ``fit_subset`` (the
    hyperparameters are fitted on at most this many random observations, 256:
    the marginal likelihood costs O(n^3) per evaluation; the posterior always
    uses every observation), ``memory_mb`` (512: a space is enumerated only
    when the posterior's observations x candidates matrix fits in this),
    ``compute_share`` (None: never; the default ensemble uses 0.25) and
    ``min_compute`` (0.25 s): retire once the model's own compute exceeds both
    this share of the evaluations' cost and this many seconds (see the module
    docstring), ``incumbent`` ("mean": the plug-in incumbent, the lowest
    posterior mean at an evaluated configuration; "observed": the lowest
    measured value), ``explore_failures`` (0.05: the share of picks ranked by
    EI x P(success) over every candidate, not only those with P >= 0.5),
    ``feasible_threshold`` (0.5: the other picks rank only the candidates
    the failure model gives at least this P(success)),
    ``exploit_tail`` (0.1; 0: off; the last fraction of the budget in which
    the pick is the lowest posterior mean instead of the highest EI: pure
    exploitation once what exploring learns can no longer be used; issue 18
    point 2, measured in docs/TECHNIQUES.md, "Exploitation at the end") and
    ``restart_patience`` (None: off; e.g. 0.1: after a tenth of the budget
    without a new best, search a basin far from the incumbent for a while,
    see ``_ei_batch``; measured, not adopted as the default),
    ``failures_in_gp`` ("never"; "always": every failed configuration enters
    the GP at the worst measured value; "common": the same once
    FAILURES_COMMON of the initial design failed; see ``_gp_data``; measured,
    not adopted: fewer failures, lower scores on the replay spaces) and
    ``feasibility`` (the failure model's kind, "forest"; None: none).  With
    several workers (``workers``, set by the search driver) and a
    ``compute_share``, the model also retires once its compute per result
    exceeds the time between results (docs/TECHNIQUES.md, "Many workers").
    ``spread_refits`` (False): with several workers, run each refit after
    the first as a job of bounded steps, one per result, while the current
    posterior keeps answering (see ``_ready``; docs/bo_refit_s20/): the model
    keeps up with 32 workers on 0.2 s evaluations, but spread from the start
    it lowered the replay score at 8 simulated workers.  ``"auto"``: refits
    in one piece until the throughput test above fails, then spread instead
    of retiring (``_spread_instead``); the default ensemble's model arm uses
    it (docs/bo_auto_s23/: at 32 MPI ranks the model proposed 73-100 % of the
    trials instead of 16-20 %).  ``features`` ("unit": the paper's inputs;
    "divisibility": also, per integer parameter, whether a level is a power
    of two and how many factors of two it has, :mod:`techniques.gp_features`;
    the default ensemble's model arm uses it since session 34,
    docs/TECHNIQUES.md, "Powers of two as GP inputs").  ``screen_design``
    (False): once the failure model has seen a success and a failure, an
    initial-design point it expects to fail is replaced by the likely point
    farthest from those already chosen (``_screened``).  ``lengthscale_prior``
    (None: the length scales by maximum likelihood; "gamma" or "dimension":
    by MAP under that prior, :data:`techniques.gaussian_process.LENGTHSCALE_PRIORS`;
    measured on the replay spaces in session 36, no gain, docs/TECHNIQUES.md).
    """

    name: ClassVar[str] = "BayesOpt"
    summary: ClassVar[str] = "Gaussian process (Matern 5/2) + expected improvement (Willemsen et al., PMBS 2021)"

    def __init__(self, *, seed: int | None = None, initial: int | None = None, xi: float = 0.0,
                 refit_growth: float = 1.25, enumerate_limit: int = 50_000, pool: int = 2000,
                 incumbents: int = 5, fit_subset: int = 256, memory_mb: float = 512.0,
                 compute_share: float | None = None, min_compute: float = 0.25,
                 incumbent: str = "mean", explore_failures: float = 0.05, exploit_tail: float = 0.1,
                 restart_patience: float | None = None, feasible_threshold: float = FILTER_THRESHOLD,
                 failures_in_gp: str = "never", spread_refits: bool | str = False, features: str = "unit",
                 screen_design: bool = False, lengthscale_prior: str | None = None, initial_cap: int = 20,
                 **options: Any) -> None:
        super().__init__(seed=seed, **options)
        if isinstance(initial_cap, bool) or not isinstance(initial_cap, (int, np.integer)) or initial_cap < 1:
            raise TechniqueError(f"BayesOpt: initial_cap must be a whole number >= 1 (got {initial_cap!r}); the "
                                 f"initial design is min(initial_cap, max(5, budget // 5)) points unless `initial` "
                                 f"sets it, e.g. initial_cap=20")
        #: the initial design's size without ``initial``: min(initial_cap, max(5, budget // 5))
        self.initial_cap = int(initial_cap)
        if lengthscale_prior not in LENGTHSCALE_PRIORS:
            raise TechniqueError(f"BayesOpt: lengthscale_prior must be one of {LENGTHSCALE_PRIORS} (got "
                                 f"{lengthscale_prior!r}); None fits the GP's length scales by maximum likelihood, "
                                 f"'gamma' or 'dimension' by MAP under that prior (techniques.gaussian_process)")
        #: the GP's length scales are fitted under this prior (MAP), None: maximum likelihood
        self.lengthscale_prior = lengthscale_prior
        if not isinstance(screen_design, (bool, np.bool_)):
            raise TechniqueError(f"BayesOpt: screen_design must be True or False (got {screen_design!r}); True "
                                 f"replaces an initial-design point the failure model expects to fail")
        #: replace a design point that the failure model (once it has seen a success and a failure) gives
        #: P(success) under ``feasible_threshold`` by the likely point farthest from those measured or in flight
        self.screen_design = bool(screen_design)
        if features not in FEATURES:
            raise TechniqueError(f"BayesOpt: features must be 'unit' (each parameter's value index in [0, 1]) or "
                                 f"'divisibility' (also whether integer levels are powers of two, and how many "
                                 f"factors of two they have: techniques.gp_features); got {features!r}")
        self.features = features
        if failures_in_gp not in ("never", "always", "common"):
            raise TechniqueError(f"BayesOpt: failures_in_gp must be 'never', 'always' or 'common' (got "
                                 f"{failures_in_gp!r}); 'always' enters every failed configuration into the GP at "
                                 f"the worst value measured, 'common' does so once at least "
                                 f"{FAILURES_COMMON:.0%} of the initial design failed")
        self.failures_in_gp = failures_in_gp
        #: with several workers, spread each refit over the following results (see ``_ready``); off by
        #: default: at 8 simulated workers it lowered the replay score (docs/bo_refit_s20/); "auto": only
        #: once the throughput test would otherwise retire the model (see ``_charge_compute``)
        if not (isinstance(spread_refits, (bool, np.bool_)) or spread_refits == "auto"):
            raise TechniqueError(f"BayesOpt: spread_refits must be True, False or 'auto' (got {spread_refits!r}); "
                                 f"True spreads each refit over the following results when several workers "
                                 f"measure, 'auto' starts doing so when refits in one piece would hold them up")
        self.spread_refits: bool | str = spread_refits if spread_refits == "auto" else bool(spread_refits)
        #: whether refits are spread now: from the start with True; with "auto" from the result at which
        #: the throughput test first failed (``spread_since``, for the report)
        self.spreading = self.spread_refits is True
        self.spread_since: int | None = None
        self._failures_common: bool | None = None  # 'common': decided once the initial design is in
        if not 0.0 < feasible_threshold < 1.0:
            raise TechniqueError(f"BayesOpt: feasible_threshold must be in (0, 1) (got {feasible_threshold!r}); "
                                 f"{FILTER_THRESHOLD} ranks only candidates more likely to run than not")
        self.feasible_threshold = float(feasible_threshold)
        if restart_patience is not None and not 0.0 < restart_patience < 1.0:
            raise TechniqueError(f"BayesOpt: restart_patience must be in (0, 1) or None (got {restart_patience!r}); "
                                 "0.1 starts a search in another basin after a tenth of the budget without a "
                                 "new best, None never")
        self.restart_patience = None if restart_patience is None else float(restart_patience)
        if not 0.0 <= exploit_tail < 1.0:
            raise TechniqueError(f"BayesOpt: exploit_tail must be in [0, 1) (got {exploit_tail!r}); e.g. 0.1 "
                                 "spends the last tenth of the budget on the lowest predicted values, 0 never")
        self.exploit_tail = float(exploit_tail)
        if incumbent not in ("observed", "mean"):
            raise TechniqueError(f"BayesOpt: incumbent must be 'mean' (the default, the plug-in incumbent) "
                                 f"or 'observed' (the best measured value); got {incumbent!r}")
        self.incumbent = incumbent
        if not 0.0 <= explore_failures <= 1.0:
            raise TechniqueError(f"BayesOpt: explore_failures must be in [0, 1] (got {explore_failures!r}); "
                                 "0.05 lets one pick in 20 go where the failure model expects a failure")
        self.explore_failures = float(explore_failures)
        if refit_growth <= 1.0:
            raise TechniqueError(f"BayesOpt: refit_growth must be > 1 (got {refit_growth!r}); 1.25 is the default")
        self.initial = None if initial is None else max(int(initial), 1)
        self.xi = float(xi)
        self.refit_growth = float(refit_growth)
        self.enumerate_limit = int(enumerate_limit)
        self.pool = max(int(pool), 10)
        self.incumbents = max(int(incumbents), 1)
        self.fit_subset = max(int(fit_subset), 10)
        self.memory_mb = float(memory_mb)
        if compute_share is not None and not compute_share > 0:
            raise TechniqueError(f"BayesOpt: compute_share must be > 0 or None (got {compute_share!r}); "
                                 "0.25 retires the model once it costs a quarter of the evaluations' time, None never")
        self.compute_share = None if compute_share is None else float(compute_share)
        self.min_compute = float(min_compute)
        #: the clock the compute is timed with (a test may replace it)
        self.clock = time.perf_counter
        self._one_blas_thread = OneBlasThread()

    # -- state ---------------------------------------------------------------
    def _on_bind(self) -> None:
        self._failures_common = None
        self._obs: dict[str, tuple[dict[str, Any], float]] = {}  # every known result (own and foreign)
        self._pending: dict[str, dict[str, Any]] = {}
        self._pool_configs: list[dict[str, Any]] = []
        self._pool_hashes: list[str] = []
        self._pool_index: dict[str, int] = {}
        self._extra = divisibility_columns(self.space) if self.features == "divisibility" else []
        self._Xp = np.zeros((0, self._width()))
        self._avail = np.zeros(0, dtype=bool)
        self._enumerated: bool | None = None  # None: pool not built yet
        self._init_queue: list[dict[str, Any]] | None = None
        # basin restarts: the best seen and when, and the episode in progress (picks left, its centre)
        self._rs_best, self._rs_at = math.inf, 0
        self._episode_left = 0
        self._episode_center: dict[str, Any] | None = None
        #: episodes started so far (a restart moves the search to a configuration far from the incumbent)
        self.restarts = 0
        self._gp: PoolPosterior | None = None
        self._rows: dict[str, int] = {}  # hash -> GP row
        self._real_rows = 0  # GP rows with a measured (not fantasy) target
        self._hyper: GPHyper | None = None
        self._n_at_fit = 0
        self._log = True
        self._center, self._scale = 0.0, 1.0
        self._refit_now = False
        self._pool_stale = False
        self._resample_due = False  # the best moved since the sampled pool was last drawn afresh
        self._job: Iterator[None] | None = None  # a spread refit in progress (see _ready)
        self._ahead: list[dict[str, Any]] = []  # picks of the last batch not handed out yet
        self._widest = 1  # the largest batch asked for (about 1.5 x the workers under MPI)
        self.fits = 0
        self.compute_seconds = 0.0  # own work: proposals, posterior updates, refits (not the set-up)
        self.setup_seconds = 0.0  # one-time work: building the candidate pool, the first fit
        self._setup_open = 0.0  # set-up time inside the section being timed
        self.evaluation_seconds = 0.0  # cost of the evaluations seen (Trial.cost)
        self._costed = 0  # trials that carried a cost
        # running compute at each of the last WINDOW + 1 results (the throughput test)
        self._marks: deque[float] = deque(maxlen=MAX_WINDOW + 1)
        self.retired: str | None = None  # why the model stopped, once it has
        if self.initial is not None:
            self._n_init = self.initial
        else:
            cap = self.initial_cap
            self._n_init = cap if not self.budget else min(cap, max(5, int(self.budget) // 5))

    def _width(self) -> int:
        return int(self.space.dims) + len(self._extra)

    def _gx(self, config: dict[str, Any]) -> np.ndarray:
        """The GP's inputs: the unit-cube view, then the ``features`` columns (none with "unit")."""
        x = self.encode(config)
        if not self._extra:
            return x
        return np.concatenate([x, [table.get(config.get(name), 0.0) for name, table in self._extra]])

    def _target(self, value: float) -> float:
        g = math.log(value) if self._log else value
        return (g - self._center) / self._scale

    def _learn(self, trial: Trial) -> None:
        h = trial.config_hash
        self._pending.pop(h, None)
        if h in self._obs:
            return
        value = float(trial.value)
        if math.isnan(value):
            value = math.inf
        self._obs[h] = (dict(trial.config), value)
        i = self._pool_index.get(h)
        if i is not None:
            self._avail[i] = False
        if self._gp is None:
            return
        if not math.isfinite(value):
            if self._impute_failures() and h not in self._rows:
                # the failure as the worst value measured so far (refits use the worst at that time)
                self._rows[h] = self._gp.add(self._gx(trial.config), self._worst_target())
                self._real_rows += 1
            return
        if self._log and value <= 0:
            self._refit_now = True  # the log transform no longer applies
            return
        row = self._rows.get(h)
        if row is None:
            self._rows[h] = self._gp.add(self._gx(trial.config), self._target(value), col=i)
        else:
            self._gp.set_target(row, self._target(value))
        self._real_rows += 1

    def observe(self, trial: Trial) -> None:
        improved = trial.value < self.best_value and not trial.duplicate
        super().observe(trial)
        self._update(trial, improved)

    def observe_foreign(self, trial: Trial) -> None:
        improved = trial.value < self.best_value
        super().observe_foreign(trial)
        self._update(trial, improved)

    def _update(self, trial: Trial, improved: bool) -> None:
        """Charge the evaluation's cost; learn from it (timed) unless the model has retired."""
        self._charge_evaluation(trial)
        if self.retired is None:
            t0 = self.clock()
            with self._one_blas_thread():
                self._learn(trial)
                self._pool_stale = self._pool_stale or improved
                self._resample_due = self._resample_due or improved
                if self._job is None and self._gp is not None and self._refit_due() and self._spread():
                    self._job = self._refit_steps()  # started here, not at the next batch: one step per result
                self._advance()
            self._marks.append(self.compute_seconds)
            self._charge_compute(t0)

    def restore(self, trials: Any) -> None:
        super().restore(trials)
        for t in trials:
            self._charge_evaluation(t)
        t0 = self.clock()
        for t in trials:
            self._learn(t)
        self._charge_compute(t0)

    def state_dict(self) -> dict[str, Any]:
        return {**super().state_dict(), "fits": self.fits, "observations": len(self._obs),
                "pool": len(self._pool_hashes), "compute_seconds": round(self.compute_seconds, 3),
                "setup_seconds": round(self.setup_seconds, 3),
                "evaluation_seconds": round(self.evaluation_seconds, 3), "retired": self.retired,
                "spread_since": self.spread_since}

    # -- cost of the model against the cost of the evaluations ---------------
    @property
    def done(self) -> bool:
        return self.retired is not None or super().done

    @property
    def initial_design_done(self) -> bool:
        """Whether the initial design's results (own or other techniques') are in.

        Why public: a partner that shares the lead with this model
        (``DefaultEnsemble(partner=...)``) starts only once the design that
        the model's first fit needs has been measured.
        """
        return len(self._obs) >= int(getattr(self, "_n_init", 0))

    def _charge_evaluation(self, trial: Trial) -> None:
        if trial.cost is not None and not trial.duplicate and math.isfinite(trial.cost):
            self.evaluation_seconds += max(float(trial.cost), 0.0)
            self._costed += 1

    def _setup_section(self, t0: float) -> None:
        """Book the time since ``t0`` as one-time set-up (pool, first fit), not as running compute."""
        dt = self.clock() - t0
        self.setup_seconds += dt
        self._setup_open += dt

    def _horizon(self) -> int:
        """Evaluations the set-up is spread over: the budget; without one, at least ten initial designs."""
        return max(int(self.budget) if self.budget else 10 * self._n_init, self._costed)

    def _window(self) -> int:
        """Results the throughput test averages over: WINDOW; with ``spread_refits`` four rounds of the
        workers where that is longer.

        Why longer under many workers: the search driver keeps 1.5 x the
        workers queued, so a step of up to half a round of evaluations is
        absorbed; what holds workers up is compute per result above the gap
        sustained over rounds.  A 32-result window at 32 workers (0.2 s of
        results at 0.2 s evaluations) was filled by one refit of 0.1-0.3 s
        while the mean over 100-result stretches was 2-5 ms of the 6.25 ms
        gap (docs/bo_refit_s20/).
        """
        if not self.spreading or self.failures_in_gp != "never":  # refits in one piece (see _spread):
            return WINDOW                                                # their bursts do hold the workers up
        return min(MAX_WINDOW, max(WINDOW, 4 * int(self.workers)))

    def _spread_instead(self) -> bool:
        """``spread_refits="auto"``: the first time the throughput test fails, spread refits instead of retiring.

        Why: under a few workers the model keeps up with refits in one piece,
        and those are what the replay scores were measured with (spread from
        the start lowered them at 8 simulated workers, docs/bo_refit_s20/);
        under many workers on cheap evaluations a refit in one piece holds
        every worker up, and the model retired after about a tenth of a
        32-rank run.  Spreading is the cheaper way to keep the model; the test
        then starts a fresh window (the spread mode's own, ``_window``) and
        retires the model only if it fails again.
        """
        if self.spread_refits != "auto" or self.spreading or self.failures_in_gp != "never":
            return False
        self.spreading = True
        self.spread_since = len(self._obs)
        self._marks.clear()
        return True

    def _charge_compute(self, t0: float) -> None:
        """Add the time since ``t0`` to the model's compute; retire when it outweighs the evaluations.

        Three tests (docs/TECHNIQUES.md, "The cost of the model" and "Many
        workers"): the running compute (everything but the set-up) against
        ``compute_share`` of the evaluations seen so far, the marginal cost
        that decides whether going on pays; the one-time set-up against
        ``compute_share`` of what the whole run's evaluations will cost at the
        mean cost seen so far; and, with several workers (``self.workers``, set
        by the search driver), the compute per result over the last
        ``WINDOW`` results against the time between results (mean cost /
        workers): past that the workers wait for the model.  A sunk set-up
        cost alone never retires the model on a run long enough to repay it
        (before, a 0.4 s pool build against one 0.2 s evaluation did, and
        under 4-32 MPI ranks the model proposed 4 % of the trials).
        """
        self.compute_seconds += max(self.clock() - t0 - self._setup_open, 0.0)
        self._setup_open = 0.0
        if self.retired is not None or self.compute_share is None or self._costed == 0:
            return
        mean_cost = self.evaluation_seconds / self._costed
        # the evaluations it has asked for and not yet seen will cost the same: with many workers
        # the model proposes a queue ahead of the results, and its compute is for those too
        allowed = self.compute_share * (self.evaluation_seconds + mean_cost * len(self._pending))
        projected = mean_cost * self._horizon()
        if self.compute_seconds > max(allowed, self.min_compute):
            self.retired = (f"model compute {self.compute_seconds:.3g} s exceeded {self.compute_share:g} of the "
                            f"{self.evaluation_seconds:.3g} s its {self._costed} evaluations cost")
        elif self.setup_seconds > max(self.compute_share * projected, self.min_compute):
            self.retired = (f"model set-up {self.setup_seconds:.3g} s exceeded {self.compute_share:g} of the "
                            f"{projected:.3g} s its {self._horizon()} evaluations are projected to cost")
        elif self.workers > 1 and len(self._marks) > self._window():
            # many workers: a result arrives every mean_cost / workers seconds; a model whose compute per
            # result is longer than that keeps workers waiting however small its share of their time is
            window = self._window()
            per_result = (self._marks[-1] - self._marks[-1 - window]) / window
            gap = mean_cost / self.workers
            if per_result > gap and self._spread_instead():
                _log.info("BayesOpt: %.3g ms per result (last %d) against %.3g ms between results of %d "
                          "workers: refits are spread over results from here on", 1000 * per_result, window,
                          1000 * gap, self.workers)
            elif per_result > gap:
                self.retired = (f"model compute {1000 * per_result:.3g} ms per result (last {window}) exceeded "
                                f"the {1000 * gap:.3g} ms between results of {self.workers} workers"
                                + (" with refits spread" if self.spreading else ""))
        if self.retired is not None:
            _log.info("BayesOpt retired after %d observations: %s; the other techniques go on",
                      len(self._obs), self.retired)
            # free the posterior (observations x candidates); nothing reads it any more
            self._gp = None
            self._job = None
            self._pool_configs, self._pool_hashes, self._pool_index = [], [], {}
            self._Xp = np.zeros((0, self._width()))
            self._avail = np.zeros(0, dtype=bool)

    # -- candidate pool ------------------------------------------------------
    def _seen(self, h: str) -> bool:
        return h in self._obs or h in self._pending or h in self.known

    def _set_pool(self, configs: list[dict[str, Any]], hashes: list[str] | None = None) -> None:
        """Make ``configs`` the candidate pool; ``hashes``, when the caller has them, saves hashing each again."""
        self._pool_configs = configs
        self._pool_hashes = [self.hash(c) for c in configs] if hashes is None else hashes
        self._pool_index = {h: i for i, h in enumerate(self._pool_hashes)}
        self._Xp = np.vstack([self._gx(c) for c in configs]) if configs else np.zeros((0, self._width()))
        self._avail = np.array([not self._seen(h) for h in self._pool_hashes], dtype=bool)
        if self._gp is not None:
            self._gp.set_pool(self._Xp)
        if self.feasibility is not None:
            self.feasibility.set_pool(self._Xp[:, : int(self.space.dims)])

    def _build_pool(self) -> None:
        """Enumerate a space of at most ``enumerate_limit`` valid points once; else sample one.

        Also sampled when the posterior's (observations x candidates) matrix
        would exceed ``memory_mb`` for the budget (2048 observations without one).
        """
        size = self.space.size
        count = self.space.count_valid(limit=self.enumerate_limit) if size <= 10 * self.enumerate_limit else None
        rows = int(self.budget) if self.budget else 2048  # observations the posterior will hold, about
        fits = count is not None and count * rows * 8 <= self.memory_mb * 2**20
        if count is not None and count <= self.enumerate_limit and fits:
            self._enumerated = True
            self._set_pool([dict(c) for c in self.space.enumerate_valid()])
        else:
            self._enumerated = False
            self._resample_pool()
        self._pool_stale = self._resample_due = False

    def _resample_pool(self) -> None:
        """A fresh sampled pool (large spaces), with the hashes ``_sampled_candidates`` already computed."""
        cands = self._sampled_candidates()
        self._set_pool(list(cands.values()), list(cands))

    def _sampled_candidates(self) -> dict[str, dict[str, Any]]:
        """Uniform valid samples plus local moves around the best few (large spaces), by hash.

        Keyed by hash because the pool needs the hashes too: hashing the pool a
        second time (canonical JSON + SHA per point) was about a tenth of the
        search driver's CPU under 8 MPI ranks (``bench_mpi --profile``, rank 0).
        """
        cands: dict[str, dict[str, Any]] = {}

        def add(config: dict[str, Any]) -> None:
            h = self.hash(config)
            if h not in cands and not self._seen(h):
                cands[h] = dict(config)

        try:
            for c in self.space.sample(self.rng, self.pool):
                add(c)
        except InfeasibleSpaceError:  # sampling found nothing: local moves remain
            pass
        finite = sorted(((v, h) for h, (_, v) in self._obs.items() if math.isfinite(v)))[: self.incumbents]
        for rank, (_, h) in enumerate(finite):
            self._local_moves(self._obs[h][0], rank, add)
        return cands

    def _local_moves(self, best: dict[str, Any], rank: int, add: Any) -> None:
        """Neighbours, mutations and small perturbations of ``best`` (the ``rank``-th best), passed to ``add``."""
        rate = min(0.5, 2.0 / max(int(self.space.dims), 1))
        for c in self.space.neighbours(best, self.rng):
            add(c)
        x = self.encode(best)
        for _ in range(20 if rank == 0 else 5):
            add(self.space.mutate(best, self.rng, rate=rate))
            add(self.decode(x + self.rng.normal(0.0, 0.05, x.shape)))

    # -- initial design ------------------------------------------------------
    def _initial_design(self, n: int) -> list[dict[str, Any]]:
        """Latin hypercube points snapped to the nearest available pool point; best of 10 by maximin."""
        idx = np.flatnonzero(self._avail)
        if len(idx) == 0 or n <= 0:
            return []
        n = min(n, len(idx))
        P = self._Xp[idx][:, : int(self.space.dims)]
        dims = P.shape[1]
        best_pick, best_score = None, -math.inf
        for _ in range(10):
            # one stratum per point in every dimension, random position inside it (McKay et al. 1979)
            lhs = (np.argsort(self.rng.random((n, dims)), axis=0) + self.rng.random((n, dims))) / n
            free = np.ones(len(idx), dtype=bool)
            pick = []
            for point in lhs:
                d2 = ((P - point) ** 2).sum(1)
                d2[~free] = np.inf
                j = int(np.argmin(d2))
                free[j] = False
                pick.append(j)
            chosen = P[pick]
            if n > 1:
                dd = ((chosen[:, None, :] - chosen[None, :, :]) ** 2).sum(-1)
                score = float(dd[np.triu_indices(n, 1)].min())
            else:
                score = 0.0
            if score > best_score:
                best_pick, best_score = pick, score
        assert best_pick is not None
        return [self._pool_configs[int(idx[j])] for j in best_pick]

    def _screened(self, config: dict[str, Any]) -> dict[str, Any]:
        """``config``, or in its place the likely-to-run pool point farthest from every point already chosen.

        Why: where most of a space fails (a grid with unknown constraints)
        a space-filling design spends most of its points on failures before
        the model's first fit, and with a budget of a few dozen those are
        a large share of the run.  As soon as the failure model has seen a
        success and a failure, a design point it gives P(success) under
        ``feasible_threshold`` is replaced by the point, among those it
        gives at least that, farthest from the measured and pending ones,
        so the design stays spread out.  Where no point is likely, or the
        model cannot tell yet, the design point stands.
        """
        model = self.feasibility
        if model is None or model.failures == 0 or model.failures >= model.observations:
            return config
        dims = int(self.space.dims)
        if float(model.p_success(self.encode(config)[None, :dims])[0]) >= self.feasible_threshold:
            return config
        idx = np.flatnonzero(self._avail)
        if len(idx) == 0:
            return config
        likely = idx[model.pool_p_success(idx) >= self.feasible_threshold]
        if len(likely) == 0:
            return config
        chosen = [c for c, _ in self._obs.values()] + list(self._pending.values())
        P = self._Xp[likely][:, :dims]
        if not chosen:
            return self._pool_configs[int(likely[0])]
        S = np.vstack([self.encode(c)[:dims] for c in chosen])
        far = np.full(len(P), np.inf)
        for row in S:  # nearest chosen point, one row at a time: no (pool x chosen x dims) array
            far = np.minimum(far, ((P - row) ** 2).sum(1))
        return self._pool_configs[int(likely[int(np.argmax(far))])]

    def _random_unseen(self) -> dict[str, Any] | None:
        idx = np.flatnonzero(self._avail)
        if len(idx):
            return self._pool_configs[int(idx[int(self.rng.integers(len(idx)))])]
        if self._enumerated:
            return None
        for _ in range(64):
            c = self.random_config()
            if not self._seen(self.hash(c)):
                return c
        return None

    # -- model ---------------------------------------------------------------
    def _finite(self) -> list[tuple[dict[str, Any], float]]:
        return [(c, v) for c, v in self._obs.values() if math.isfinite(v)]

    def _impute_failures(self) -> bool:
        """Whether failures enter the GP now (``failures_in_gp``; see :meth:`_gp_data`).

        'common' decides once, from the first ``initial`` observations (the
        initial design: Latin hypercube points snapped to valid ones, which
        reach the space's failing corners more often than a uniform sample
        would): at least FAILURES_COMMON of them failed.  Decided from the
        observations in the order they came, so a resumed run decides the
        same; a yes asks for a refit, so the failures seen so far enter at
        the next fit.
        """
        if self.failures_in_gp != "common":
            return self.failures_in_gp == "always"
        if self._failures_common is None:
            if len(self._obs) < self._n_init:
                return False
            first = list(self._obs.values())[: self._n_init]
            share = sum(not math.isfinite(v) for _, v in first) / len(first)
            self._failures_common = share >= FAILURES_COMMON
            if self._failures_common:
                self._refit_now = True  # the failures seen so far enter at the next fit
        return self._failures_common

    def _worst_target(self) -> float:
        """The GP target of the worst finite value observed (what ``failures_in_gp`` enters for a failure)."""
        return self._target(max(v for _, v in self._finite()))

    def _gp_data(self) -> list[tuple[dict[str, Any], float]]:
        """What the GP is fitted on: every finite result, and with ``failures_in_gp`` every failure at the worst.

        Why the option: failures never enter the GP otherwise, so next to a
        region of failures the GP sees nothing and its expected improvement
        stays high; on pnpoly (file mode) a fifth of BayesOpt's proposals
        after the first fifth of the budget failed (2026-11-27, three seeds).
        Entering a failure at the worst measured value lowers the expected
        improvement there; it also bends the GP near the boundary, where a
        valid optimum may sit, so it is an option until measured.
        """
        data = self._finite()
        if not self._impute_failures() or not data:
            return data
        worst = max(v for _, v in data)
        return data + [(c, worst) for c, v in self._obs.values() if not math.isfinite(v)]

    def _refit(self) -> None:
        """Fit hyperparameters on every finite result; rebuild the posterior; re-add pending as fantasies."""
        t_start = self.clock() if self.fits == 0 else None
        data = self._gp_data()
        values = np.array([v for _, v in data])
        self._log = bool(values.min() > 0)
        g = np.log(values) if self._log else values
        self._center = float(g.mean())
        self._scale = float(g.std()) if g.std() > 1e-12 else 1.0
        X = np.vstack([self._gx(c) for c, _ in data])
        y = (g - self._center) / self._scale
        fit = np.arange(len(data))
        if len(fit) > self.fit_subset:  # subset of data for the hyperparameters (R&W 2006, sec. 8.3.1)
            fit = np.sort(self.rng.choice(len(fit), self.fit_subset, replace=False))
        restarts = 2 if self._hyper is None else (1 if len(data) <= self.fit_subset else 0)
        self._hyper = fit_hyperparameters(X[fit], y[fit], self.rng, start=self._hyper, restarts=restarts,
                                          prior=self.lengthscale_prior)
        self.fits += 1
        self._n_at_fit = len(data)
        self._refit_now = False
        self._job = None  # a spread refit in progress is superseded
        if self._enumerated is False and self._pool_stale:
            self._gp = None  # the posterior is rebuilt below: not its V for the new pool first
            self._resample_pool()
            self._pool_stale = self._resample_due = False
        gp = PoolPosterior.from_data(self._hyper, X, y, self._Xp)
        self._rows = {self.hash(c): i for i, (c, _) in enumerate(data)}
        self._real_rows = len(data)
        self._gp = gp
        self._add_pending(gp)
        if t_start is not None:
            self._setup_section(t_start)

    def _add_pending(self, gp: PoolPosterior) -> None:
        """Re-add the configurations in flight as kriging-believer fantasies at their posterior mean.

        One block: a fantasy at the posterior mean leaves the mean unchanged
        everywhere, so every fantasy is the mean given the measured rows
        alone, the same values as adding them one after the other.
        """
        items = list(self._pending.items())
        if not items:
            return
        cols = np.array([self._pool_index.get(h, -1) for h, _ in items], dtype=int)
        X = np.vstack([self._gx(c) for _, c in items])
        first = gp.add_block(X, gp.means_at(X, cols), cols)
        for k, (h, _) in enumerate(items):
            self._rows[h] = first + k

    def _ready(self) -> None:
        """Refit when due, or refresh a sampled pool that went stale (the best moved).

        Spread (``spread_refits``, several workers): a due refit starts a job
        that ``_update`` advances one bounded step per result while the
        current posterior goes on answering; a stale sampled pool gets local
        candidates around the new best appended instead of a fresh pool (the
        next refit draws one).
        """
        if self._job is not None:
            return
        if self._refit_due():
            if self._spread():
                self._job = self._refit_steps()
                self._advance()
            else:
                self._refit()
        elif self._enumerated is False and self._pool_stale:
            if self._spread():
                self._extend_pool_locally()
            else:
                self._resample_pool()
                self._resample_due = False
            self._pool_stale = False

    def _spread(self) -> bool:
        """Whether refits are spread over results: several workers, a posterior to answer with meanwhile."""
        return (self.spreading and self.workers > 1 and self._gp is not None
                and self.failures_in_gp == "never")

    def _advance(self) -> None:
        """One step of the refit job in progress (one per result: what is computed does not depend on time)."""
        if self._job is None:
            return
        if self._gp is None:  # retired
            self._job = None
            return
        try:
            next(self._job)
        except StopIteration:
            self._job = None

    def _refit_steps(self) -> Iterator[None]:
        """``_refit`` in steps (see ``_ready``): the data and the random draws are taken at the start;
        the hyperparameters in chunks of L-BFGS-B iterations; the posterior by column blocks; then the
        results that came meanwhile and the configurations in flight join it in one block."""
        self._refit_now = False  # (a value <= 0 ends the log transform: this fit is on the data as it is now)
        data = self._gp_data()
        values = np.array([v for _, v in data])
        log = bool(values.min() > 0)
        g = np.log(values) if log else values
        center = float(g.mean())
        scale = float(g.std()) if g.std() > 1e-12 else 1.0
        X = np.vstack([self._gx(c) for c, _ in data])
        y = (g - center) / scale
        fit = np.arange(len(data))
        if len(fit) > self.fit_subset:
            fit = np.sort(self.rng.choice(len(fit), self.fit_subset, replace=False))
        # from the previous fit only (the first fit, in one piece, had its random restarts): a random
        # restart doubled the cost of the refits of results 50-300, which at 32 workers alone exceeded
        # the time between results (docs/bo_refit_s20/)
        restarts = 0
        # one step per start (the same starts, draws and iterations as fit_hyperparameters): L-BFGS-B
        # cut into smaller pieces loses its curvature memory and, in the stand-in
        # (scripts/bench_bo_pick.py --workers), cost several times the iterations in all
        steps = fit_hyperparameters_steps(X[fit], y[fit], self.rng, start=self._hyper, restarts=restarts, chunk=50,
                                          prior=self.lengthscale_prior)
        hyper = None
        while hyper is None:
            hyper = next(steps)
            if hyper is None:
                yield None
        cands = None
        if self._enumerated is False and self._resample_due:
            cands = self._sampled_candidates()
            self._resample_due = False
            pool_X = np.vstack([self._gx(c) for c in cands.values()]) if cands else self._Xp[:0]
            yield None
        else:
            pool_X = self._Xp
        post = None
        for post in PoolPosterior.build_steps(hyper, X, y, pool_X):
            if post is None:
                yield None
        assert post is not None
        # the swap: from here the new posterior answers
        self._hyper, self._log, self._center, self._scale = hyper, log, center, scale
        self.fits += 1
        self._n_at_fit = len(data)
        self._gp = None
        if cands is not None:
            self._set_pool(list(cands.values()), list(cands))
            self._pool_stale = False
        self._rows = {self.hash(c): i for i, (c, _) in enumerate(data)}
        later = [(h, c, v) for h, (c, v) in self._obs.items()
                 if h not in self._rows and math.isfinite(v) and not (log and v <= 0)]
        if later:
            cols = np.array([self._pool_index.get(h, -1) for h, _, _ in later], dtype=int)
            first = post.add_block(np.vstack([self._gx(c) for _, c, _ in later]),
                                   np.array([self._target(v) for _, _, v in later]), cols)
            for k, (h, _, _) in enumerate(later):
                self._rows[h] = first + k
        self._real_rows = len(data) + len(later)
        self._gp = post
        self._add_pending(post)

    def _extend_pool_locally(self) -> None:
        """Append local moves around the best configuration to a sampled pool (O(m^2 p), not a new pool)."""
        finite = [(v, h) for h, (_, v) in self._obs.items() if math.isfinite(v)]
        if not finite:
            return
        best = self._obs[min(finite)[1]][0]
        cands: dict[str, dict[str, Any]] = {}

        def add(config: dict[str, Any]) -> None:
            h = self.hash(config)
            if h not in cands and h not in self._pool_index and not self._seen(h):
                cands[h] = dict(config)

        self._local_moves(best, 0, add)
        if not cands:
            return
        start = len(self._pool_configs)
        new_X = np.vstack([self._gx(c) for c in cands.values()])
        self._pool_configs = self._pool_configs + list(cands.values())
        self._pool_hashes = self._pool_hashes + list(cands)
        self._pool_index.update({h: start + k for k, h in enumerate(cands)})
        self._Xp = np.vstack([self._Xp, new_X])
        self._avail = np.concatenate([self._avail, np.ones(len(cands), dtype=bool)])
        if self._gp is not None:
            self._gp.extend_pool(new_X)
        if self.feasibility is not None:
            self.feasibility.set_pool(self._Xp[:, : int(self.space.dims)])

    def _refit_due(self) -> bool:
        # spread over several workers: at least two results per worker between refits (W results are in
        # flight and the picks are a quarter queue stale anyway; early, the growth rule alone refits
        # every few results, and at 32 workers the refits of results 50-300 alone cost more than the
        # time between results: docs/bo_refit_s20/)
        least = 2 * self.workers if self._spread() else 1
        return (self._gp is None or self._refit_now
                or self._real_rows >= max(self._n_at_fit + least, self.refit_growth * self._n_at_fit))

    # -- basin restarts --------------------------------------------------------
    def _ei_batch(self, k: int) -> list[dict[str, Any]]:
        """``k`` picks; with ``restart_patience`` set, after that share of the budget without a new best,
        a restart episode (off by default: 25 seeds on the five replay spaces did not gain, below).

        Why: on the replayed GPU spaces the runs that score worst are not slow,
        they are stuck: within 60 evaluations they find a configuration 1.2-1.6 x
        the optimum in one basin (say, shared memory on) and keep refining it for
        the rest of the budget, while the optimum lies in another (shared memory
        off, another block shape) that the GP, having seen a few poor points
        there, predicts confidently to be slow, so expected improvement there is
        zero (docs/TECHNIQUES.md, "Where the mean score is lost").  An episode
        moves the search: its first pick is the highest EI among the candidates
        that differ from the incumbent in at least half of the parameters that
        vary, then for ``patience / 2`` picks EI is ranked only within two
        parameter changes of the best configuration measured near that start
        (a trust region, TuRBO's idea, Eriksson et al. NeurIPS 2019; in
        Hamming distance for categorical spaces as CASMOPOLITAN, Wan et al.
        ICML 2021), so that the second basin is searched locally before the
        global EI judges it.  The GP, the failure model and the exploitation
        tail are unchanged; no episode starts in the tail.  The episode's
        bookkeeping is not part of the database: after ``--resume`` the
        patience counts from the first proposal, and an episode in progress
        is not continued (no result is lost; the picks may differ).  The constants
        (a tenth of the budget, half of the parameters, two changes) were set
        before measuring, not fitted.  Measured (docs/TECHNIQUES.md): on conv
        A6000 seeds 0-5 it lifted the score from 0.29 to 0.70, but at the 25
        evaluation seeds of the five spaces the default with it scored 0.557
        against 0.561 without (A6000 0.468 against 0.512): kept as an option
        (``restart_patience=0.1``), not the default.
        """
        if self.restart_patience is None or self._enumerated is None:
            return self._ei_picks(k)
        self._ready()  # a refit may resample the pool: the masks below must be of the pool the picks use
        n = len(self._obs)
        if self.best_value < self._rs_best:
            self._rs_best, self._rs_at = self.best_value, n
        budget = int(self.budget) if self.budget else 0
        patience = max(10, int(self.restart_patience * budget)) if budget else 25
        if budget and n + len(self._pending) >= (1.0 - self.exploit_tail) * budget:
            return self._ei_picks(k)
        vary = np.ptp(self._Xp, axis=0) > 1e-12 if len(self._Xp) else np.zeros(0, dtype=bool)
        if self._episode_left <= 0 and n - self._rs_at >= patience and vary.any():
            finite = [(v, h) for h, (_, v) in self._obs.items() if math.isfinite(v)]
            if finite:
                x_inc = self._gx(self._obs[min(finite)[1]][0])
                changed = (np.abs(self._Xp - x_inc)[:, vary] > 1e-9).sum(1)
                picks = self._ei_within(changed >= max(2, math.ceil(int(vary.sum()) / 2)), 1)
                self._rs_at = n  # the patience counts again from here
                if picks:
                    self.restarts += 1
                    self._episode_left, self._episode_center = patience // 2, picks[0]
                    _log.debug("BayesOpt: restart %d after %d results without a new best", self.restarts, patience)
                    return picks + (self._ei_picks(k - 1) if k > 1 else [])
        if self._episode_left > 0 and self._episode_center is not None:
            x_c = self._gx(self._episode_center)
            picks = self._ei_within((np.abs(self._Xp - x_c)[:, vary] > 1e-9).sum(1) <= 2, k)
            self._episode_left -= len(picks)
            near_c = [(v, c) for c, v in self._obs.values()
                      if math.isfinite(v) and int((np.abs(self._gx(c) - x_c)[vary] > 1e-9).sum()) <= 2]
            if near_c:  # the region follows the best measured configuration near its centre
                self._episode_center = min(near_c, key=lambda t: t[0])[1]
            return picks
        return self._ei_picks(k)

    def _ei_within(self, mask: np.ndarray, k: int) -> list[dict[str, Any]]:
        """``_ei_picks`` over the available candidates in ``mask`` only (all of them if none is)."""
        allowed = self._avail & mask
        if not allowed.any():
            return self._ei_picks(k)
        keep = self._avail
        self._avail = allowed
        try:
            return self._ei_picks(k)
        finally:
            if len(self._avail) == len(keep):  # else the pool was rebuilt inside, with its own marks
                taken = allowed & ~self._avail
                self._avail = keep & ~taken

    def _ei_picks(self, k: int) -> list[dict[str, Any]]:
        """``k`` picks by EI x P(success), a kriging believer between them (k = 1: one pick, as always).

        Why one call for the batch: the believer's fantasy is the posterior
        mean, so adding it leaves the mean everywhere unchanged (its
        innovation is zero) and only shrinks the variance, which
        ``PoolPosterior.add`` keeps up to date; the mean and the plug-in
        incumbent are computed once per batch, each pick then costs one
        O(m N) posterior update instead of three.
        """
        self._ready()
        gp = self._gp
        assert gp is not None
        mu_all, _ = gp.predict()
        # (a best value <= 0 while the log transform is still in use: a spread refit without it is running)
        usable = math.isfinite(self.best_value) and not (self._log and self.best_value <= 0)
        best = self._target(self.best_value) if usable else None
        if self.incumbent == "mean":
            measured = [(h, r) for h, r in self._rows.items() if h not in self._pending]
            at = [self._pool_index.get(h) for h, _ in measured] if self._enumerated else [None]
            if measured and all(i is not None for i in at):
                # the observations are pool points (an enumerated space): their posterior mean is
                # already in mu_all, no O(m^2) solve for train_mean
                best = float(mu_all[np.asarray(at, dtype=int)].min())
            elif measured:
                best = float(gp.train_mean()[[r for _, r in measured]].min())
        out: list[dict[str, Any]] = []
        exploit = bool(self.exploit_tail and self.budget
                       and len(self._obs) + len(self._pending) >= (1.0 - self.exploit_tail) * float(self.budget))
        while len(out) < k:
            idx = np.flatnonzero(self._avail)
            if len(idx) == 0:
                config = self._random_unseen()
                if config is None:
                    break
                out.append(config)
                self._pending[self.hash(config)] = config
                continue
            mu, sd = mu_all[idx], np.sqrt(gp.variance()[idx])
            ei = expected_improvement_fast(mu, sd, float(mu.min()) if best is None else best, self.xi)
            model = self.feasibility
            if model is not None and model.failures:
                # expected improvement times the probability that the candidate runs at all
                # (constrained EI: Gardner et al., ICML 2014; Gelbart, Snoek & Adams, UAI 2014)
                p_ok = model.pool_p_success(idx)
                ei = ei * p_ok
                likely = p_ok >= self.feasible_threshold
                if likely.any() and self.rng.random() >= self.explore_failures:
                    # only among the candidates more likely to run than not: where the GP knows nothing
                    # (failures never enter it) EI is large, and EI x P alone kept paying for failures
                    ei = np.where(likely, ei, 0.0)
            else:
                p_ok = None
            top = float(ei.max())
            if exploit:  # the lowest posterior mean, among the candidates likely to run where there are any
                lowest = mu if p_ok is None or not (p_ok >= self.feasible_threshold).any() \
                    else np.where(p_ok >= self.feasible_threshold, mu, np.inf)
                j = int(np.argmin(lowest))
            elif top > 0.0:
                j = int(np.argmax(ei))
            else:  # EI underflowed everywhere: the lowest lower confidence bound, ties at random
                lcb = mu - 2.0 * sd
                if p_ok is not None:  # among the candidates more likely to run than not, where there are any
                    ok = p_ok >= self.feasible_threshold
                    lcb = np.where(ok, lcb, lcb + np.inf) if ok.any() else lcb
                j = int(np.lexsort((self.rng.random(len(idx)), lcb))[0])
            i = int(idx[j])
            config = self._pool_configs[i]
            self._rows[self._pool_hashes[i]] = gp.add(self._Xp[i], float(mu[j]), col=i)  # kriging believer
            self._avail[i] = False
            self._pending[self._pool_hashes[i]] = config
            out.append(config)
        return out

    # -- ask -----------------------------------------------------------------
    def propose(self, n: int) -> list[dict[str, Any]]:
        self._require_bound()
        if self.retired is not None:
            return []
        t0 = self.clock()
        try:
            with self._one_blas_thread():
                return self._propose(n)
        finally:
            self._charge_compute(t0)

    def _batch_size(self, n: int) -> int:
        """How many picks to compute when asked for ``n``: a quarter of the widest batch asked, at least n.

        Why: under many workers the driver asks for a full queue once
        (1.5 x the workers) and then one configuration after each result;
        recomputing the model for each costs the same per pick as a batch
        but pays the batch's fixed part every time.  Picking a quarter queue
        ahead and handing it out one by one keeps the model's picks at most
        that many results stale.  With one worker (asked one at a time) it
        is 1: exactly the sequential algorithm.
        """
        return max(n, -(-self._widest // 4))

    def _propose(self, n: int) -> list[dict[str, Any]]:
        out: list[dict[str, Any]] = []
        if self._exhausted:
            return out
        self._widest = max(self._widest, int(n))
        if self._enumerated is None:
            t0 = self.clock()
            self._build_pool()
            self._setup_section(t0)
        while self._ahead and len(out) < n:  # picks of the last batch, still unmeasured by anyone
            c = self._ahead.pop(0)
            h = self.hash(c)
            if h in self._obs or h in self.known:
                self._pending.pop(h, None)
                continue
            out.append(c)
        while len(out) < n:
            has_finite = any(math.isfinite(v) for _, v in self._obs.values())
            # the GP ranks once the initial design's results are in; asked for more first (many
            # workers), the design goes on at random instead of fitting a GP to one or two points
            if len(self._obs) < self._n_init or not has_finite:
                if self._init_queue is None:
                    self._init_queue = self._initial_design(self._n_init)
                config = None
                while self._init_queue:
                    c = self._init_queue.pop(0)
                    if not self._seen(self.hash(c)):
                        config = c
                        break
                if config is None:
                    config = self._random_unseen()
                if config is not None and self.screen_design:
                    config = self._screened(config)
                if config is None:
                    if self._enumerated and not self._pending:
                        self._exhausted = True
                    break
                h = self.hash(config)
                self._pending[h] = config
                i = self._pool_index.get(h)
                if i is not None:
                    self._avail[i] = False
                out.append(config)
                continue
            picks = self._ei_batch(self._batch_size(n - len(out)))
            if not picks:
                if self._enumerated and not self._pending:
                    self._exhausted = True
                break
            want = n - len(out)
            out.extend(picks[:want])
            self._ahead.extend(picks[want:])
        return out
