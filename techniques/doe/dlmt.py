"""DLMT: the iterative D-optimal design / linear model / ANOVA technique.

Bruel, Masnada, Videau, Legrand, Vincent, Goldman, "Autotuning under Tight
Budget Constraints: A Transparent Design of Experiments Approach", CCGRID'19
(thesis report appendix E; ``../shared/seeds/004_b8af15fbca338441.txt``).
Section III, Figure 2, steps 1-8, one iteration per ``yield``:

1. factors and levels: :func:`techniques.doe.factors.factors_of`;
2. initial model: a user formula (Eq. 3 style) or the automatic SPAPT model
   of Section V-B (linear, quadratic, cubic terms; ``full`` adds inverses);
3. a D-optimal design for the model, Fedorov's exchange over a candidate set
   sampled from the valid sub-space (Section IV-B; appendix F, Table 2: 1000
   candidates);
4. measure the design (one batch: the points are independent);
5. ANOVA on the measurements (``transform`` offers the homoscedasticity
   correction by power transformation of Section III; off by default, see
   docs/DOE.md), factors with a term at Pr(>F) < significance are
   significant (Section IV-A, Table II);
6-7. fit the model of the significant factors on the same data;
8. predict the best levels over the valid sub-space (Section V-A: "the
   complete set of valid level combinations", a sample when it is too large),
   fix the significant factors there through the space's constraint mechanism
   (:class:`techniques.doe.subspace.SubSpace`), and go back to 3 with the
   remaining factors.

After ``steps`` iterations (Section V-B ran 4), or when no factor is left,
the budget still unspent goes to the neighbourhood of the best measured
point (``rest="neighborhood"``: step 8's "neighborhood exploration ... around
predicted levels"), then the technique is done; the run's answer is the best
measured configuration.

Three defaults follow other remarks of the paper rather than its Figure 2
(screened on four replay spaces and checked on a held-out fifth at 25 seeds,
docs/DOE.md): ``levels="checked"`` (step 8 fixes the levels of the better
measured of the prediction and the sub-space's best point; appendix G,
Sec. 1, on reverting a step the logs contradict), ``reuse=True`` (earlier
runs of the sub-space join the next design as fixed rows; appendix E,
Sec. IV-B) and ``rest="neighborhood"`` (one-level-away neighbours of the best
measured point; once the last sub-space is exhausted, the last step's
levels are released, appendix G).  ``levels="predicted", reuse=False,
rest="stop"`` is the paper's iteration; ``rest="sample"`` and ``"widen"``
spend the rest on uniform samples (without, with the release);
``rest="model"`` on the expected improvement of a Gaussian process fitted
to every measured point (screened, not adopted: docs/DOE.md, session 19).
Every place where this differs from the paper is listed, with the reason, in
docs/DOE.md ("Differences from the paper").

The whole iteration is a generator driven by :meth:`DLMT.propose`; it only
reads values it has been told, and it is the only user of the technique's
random generator, so :meth:`restore` (known values from the run's history)
followed by the same seed replays the finished steps without proposing
anything and continues the interrupted step with its unmeasured points.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from typing import Any, ClassVar

import numpy as np

from ensemble.errors import TechniqueError
from techniques.base import BaseTechnique
from techniques.bayes_opt import expected_improvement_fast
from techniques.doe.design import (
    CANDIDATE_STRATEGIES,
    candidate_set,
    code_columns,
    fedorov,
)
from techniques.doe.factors import SCALES, Factor, factors_of
from techniques.doe.models import (
    DEGREES,
    TRANSFORMS,
    Model,
    anova,
    auto_model,
    boxcox,
    boxcox_lambda,
    drop_aliased,
    fit,
    model_matrix,
    nonconstant_variance_p,
    parse_formula,
    screen,
)
from techniques.doe.subspace import SubSpace
from techniques.feasibility import FeasibilityModel
from techniques.gaussian_process import (
    OneBlasThread,
    PoolPosterior,
    fit_hyperparameters,
)

__all__ = ["DLMT"]

Batch = list[dict[str, Any]]
#: what the budget left after the steps buys (docs/DOE.md, differences 6 and 12)
REST = ("sample", "widen", "neighborhood", "model", "stop")
#: ``rest="model"``: at most this many unmeasured points of the sub-space (drawn uniformly) are ranked per pick
MODEL_REST_POOL = 4000
#: where step 8 fixes the significant factors (docs/DOE.md, difference 13; reuse: difference 14)
LEVELS = ("predicted", "checked")
#: ``interactions``: "none" (the paper's additive automatic model) or "significant" (steps 6-8 add the
#: two-factor interactions among the step's significant numeric factors, effect heredity)
INTERACTIONS = ("none", "significant")
#: residual degrees of freedom the prediction model keeps when interactions are added
INTERACTION_RESIDUAL_DF = 3
#: ``avoid_failures``: a candidate is dropped when the run's failure model gives it P(success) below this
#: (the project's filter threshold, techniques.base.FILTER_THRESHOLD: more likely to fail than to succeed)
AVOID_THRESHOLD = 0.5
#: ... but a step's candidate set keeps at least this fraction of itself and this many points (all when fewer),
#: the most likely ones: a design of p + 4 <= ~30 rows from >= 100 candidates (docs/DOE.md, session 15)
AVOID_KEEP_FRACTION = 0.25
AVOID_KEEP_MIN = 100
#: ``_codes`` keeps at most this many encoded points
CODE_CACHE_LIMIT = 100_000


class DLMT(BaseTechnique):
    """D-optimal designs, ANOVA screening and linear models, step by step (Bruel et al., CCGRID'19).

    Options: ``steps`` (iterations, default 4 as in Section V-B),
    ``design_size`` (runs per design; default p + ``extra_runs``, capped by the
    budget's share per step), ``significance`` (Pr(>F) level, default 0.05:
    one star), ``terms`` ("auto", "linear", "quadratic", "cubic", "full" or a
    formula such as ``"time ~ a + I(1/b)"``), ``candidates`` (candidate-set
    size, default 1000), ``sampling`` (candidate strategy of appendix F),
    ``prediction_limit`` (sub-spaces up to this many valid points are
    enumerated for the prediction step; larger ones are sampled),
    ``transform`` (Section III's correction for non-constant variance:
    ``none`` by default, ``log``, ``boxcox`` (exponent of greatest
    likelihood), ``checked-boxcox`` (only after the score test rejects)), ``rest``
    (``neighborhood``, the default: neighbours of the best measured point,
    releasing the last step's levels once the last sub-space is exhausted;
    ``sample``: uniform samples of the last sub-space; ``widen``: the same,
    then released levels likewise; ``stop``: done after the steps, as in the
    paper and as a bandit arm should), ``levels`` (``checked``, the default:
    the levels of the better measured of the prediction and the sub-space's
    best point; ``predicted``: the model's predicted best, as in the paper),
    ``reuse`` (default True: earlier runs of the sub-space are fixed rows of
    the next design; False: fresh designs, as in the paper's runs),
    ``avoid_failures`` (default False: off until measured, docs/DOE.md
    session 15).  Why: a failed run leaves the linear model (it has no
    value), so a design point in a failing region buys nothing, and DLMT
    alone among the project's techniques did not use the failure model of
    issue 18 (point 4).  With True, a failure classifier
    (:class:`techniques.feasibility.FeasibilityModel` of the technique's
    ``feasibility`` kind) learnt from this run's own measurements only (so a
    resumed run replays the same decisions) drops, from step 2 on, the
    candidates with P(success) < ``AVOID_THRESHOLD`` from the D-optimal
    candidate set (keeping at least a quarter of it and 100 points, the most
    likely) and from the rest phase's neighbours and samples (the best
    point's neighbourhood is never emptied: its most likely neighbour stays).
    Step 1 is unchanged (no failure seen), and so is a run without failures.
    ``interactions`` (default "none", the paper's automatic model): with
    "significant", the model of steps 6-8 (the one whose minimum chooses the
    levels to fix) also has the two-factor interactions ``a:b`` of the step's
    significant numeric factors, added while the fit keeps
    ``INTERACTION_RESIDUAL_DF`` residual degrees of freedom, aliased ones
    dropped.  Why: the automatic model is additive, so each factor's level is
    chosen as if the others did not matter, while these kernels' times
    depend on products (threads per block times work per thread);
    restricting the interactions to factors already found significant is
    the effect-heredity principle of screening designs (Wu and Hamada,
    *Experiments*, Sec. 4.6), so the ANOVA screen and the design are the
    paper's.
    """

    name: ClassVar[str] = "dlmt"
    summary: ClassVar[str] = ("D-optimal designs + ANOVA screening + linear models, fixing factors "
                              "step by step (Bruel et al., CCGRID'19)")

    def __init__(self, *, seed: int | None = None, steps: int = 4, design_size: int | None = None,
                 significance: float = 0.05, terms: str = "auto", candidates: int = 1000,
                 sampling: str = "uniform", extra_runs: int = 4, prediction_limit: int = 20_000,
                 prediction_samples: int = 5000, transform: str = "none", rest: str = "neighborhood",
                 levels: str = "checked", reuse: bool = True, avoid_failures: bool = False,
                 interactions: str = "none", scale: str = "linear", **options: Any) -> None:
        super().__init__(seed=seed, **options)
        if scale not in SCALES:
            raise TechniqueError(f"dlmt: scale={scale!r}; choose 'linear' (the default: numeric factors enter the "
                                 "automatic model as their values, as in the paper) or 'log' (log2 of the value for "
                                 "factors with positive levels spanning at least a factor 4)")
        if scale == "log" and isinstance(terms, str) and terms.strip() not in ("auto", *DEGREES):
            raise TechniqueError("dlmt: scale='log' applies to the automatic terms only; with a formula in terms=, "
                                 "write the logs in the formula (e.g. 'np.log2(bx)') and leave scale='linear'")
        if interactions not in INTERACTIONS:
            raise TechniqueError(f"dlmt: interactions={interactions!r}; choose 'none' (the default: the additive "
                                 "model of the paper) or 'significant' (the levels to fix are chosen by a model with "
                                 "the two-factor interactions of the step's significant numeric factors)")
        if not isinstance(avoid_failures, bool):
            raise TechniqueError(f"dlmt: avoid_failures={avoid_failures!r}; give True (drop candidates the run's "
                                 "own failures make likely to fail, from step 2 on) or False (the default)")
        if avoid_failures and self.feasibility_kind is None:
            raise TechniqueError("dlmt: avoid_failures=True needs a failure classifier but feasibility=None; "
                                 "leave feasibility at its default ('forest') or give 'kernel' or 'gp', "
                                 "or set avoid_failures=False")
        if not isinstance(steps, int) or steps < 1:
            raise TechniqueError(f"dlmt: steps={steps!r}; give an integer >= 1 (the paper ran 4)")
        if design_size is not None and (not isinstance(design_size, int) or design_size < 2):
            raise TechniqueError(f"dlmt: design_size={design_size!r}; give an integer >= 2, or None for p + extra_runs")
        if not 0.0 < float(significance) < 1.0:
            raise TechniqueError(f"dlmt: significance={significance!r}; give a level in (0, 1), e.g. 0.05")
        if not isinstance(terms, str) or not terms.strip():
            raise TechniqueError(f"dlmt: terms={terms!r}; give 'auto', one of {DEGREES}, or a formula 'y ~ a + b'")
        if sampling not in CANDIDATE_STRATEGIES:
            raise TechniqueError(f"dlmt: sampling={sampling!r}; choose one of {CANDIDATE_STRATEGIES}")
        if transform not in TRANSFORMS:
            raise TechniqueError(f"dlmt: transform={transform!r}; choose one of {TRANSFORMS}")
        if rest not in REST:
            raise TechniqueError(f"dlmt: rest={rest!r}; choose 'sample' (spend the budget left after the steps "
                                 "on the last sub-space), 'widen' (the same, then release the last step's levels "
                                 "when that sub-space is exhausted), 'neighborhood' (one-level-away neighbours of "
                                 "the best measured point, widening likewise), 'model' (expected improvement of a Gaussian "
                                 "process fitted to every measured point, in the last sub-space, widening likewise) "
                                 "or 'stop' (done after the steps, as "
                                 "in the paper)")
        if not isinstance(reuse, bool):
            raise TechniqueError(f"dlmt: reuse={reuse!r}; give True (the default: earlier runs of the sub-space "
                                 "join the next design as fixed rows, appendix E Sec. IV-B) or False (fresh designs)")
        if levels not in LEVELS:
            raise TechniqueError(f"dlmt: levels={levels!r}; choose 'checked' (the default: the better measured of "
                                 "the prediction and the sub-space's best measured point) or 'predicted' (fix the "
                                 "model's predicted best, as in the paper)")
        if int(candidates) < 2:
            raise TechniqueError(f"dlmt: candidates={candidates!r}; give at least 2 (the paper used 1000)")
        self.n_steps = steps
        self.design_size = design_size
        self.significance = float(significance)
        self.terms = terms.strip()
        self.n_candidates = int(candidates)
        self.sampling = sampling
        self.extra_runs = int(extra_runs)
        self.prediction_limit = int(prediction_limit)
        self.prediction_samples = int(prediction_samples)
        self.transform = transform
        self.rest = rest
        self.levels = levels
        self.reuse = bool(reuse)
        self.avoid_failures = avoid_failures
        self.interactions = interactions
        self.scale = scale

    # -- binding and bad input ------------------------------------------------
    def _on_bind(self) -> None:
        self.factors: list[Factor] = factors_of(self.space, scale=self.scale)
        self.fixed: dict[str, Any] = {}
        self.steps: list[dict[str, Any]] = []
        #: what the budget left after the steps bought (``rest="sample"``), for the report
        self.rest_log: dict[str, Any] | None = None
        #: the model rest's GP fits run on one BLAS thread (small matrices; see OneBlasThread)
        self._one_blas_thread = OneBlasThread()
        self._gen: Generator[Batch, list[float], None] | None = None
        self._batch: Batch | None = None
        self._hashes: list[str] = []
        self._handed: set[int] = set()
        self._requested: set[str] = set()
        #: every point the iteration asked for, with its value (only the generator's own data: resume replays it)
        self._data: list[tuple[dict[str, Any], float]] = []
        #: (hash, config) of each enumerated sub-space, by id (the sub-spaces live in ``self._subs``)
        self._enumerated: dict[int, list[tuple[str, dict[str, Any]]]] = {}
        #: ``encode`` of the points ranked in the rest phase, by their values (see ``_codes``)
        self._code_cache: dict[tuple[Any, ...], np.ndarray] = {}
        self._names = [p.name for p in self.space.params]
        self._finished = False
        self._user = None if self.terms in ("auto", *DEGREES) else parse_formula(self.terms, self.factors)
        self._check_budget()

    def _check_budget(self) -> None:
        """Refuse a budget that cannot pay for the first design (with the fix in the message)."""
        if self.budget is None:
            return
        if self.design_size is not None and self.design_size + 1 > self.budget:
            raise TechniqueError(
                f"dlmt: design_size={self.design_size} needs {self.design_size + 1} evaluations (the design and "
                f"the predicted point) but the budget is {self.budget}; raise --test-limit to at least "
                f"{self.design_size + 1} or lower design_size")
        numeric = [f for f in self.factors if f.kind == "numeric"]
        model = self._user or auto_model(numeric, "linear")
        if self._user is not None:
            need = model.width() + 2
        else:
            need = len(numeric) + 3  # intercept + one column per factor, one residual df, the predicted point
        if need > self.budget:
            raise TechniqueError(
                f"dlmt: the budget of {self.budget} evaluations is smaller than the first design needs ({need}: "
                f"{model.width()} coefficients of '{model.formula}', one residual degree of freedom for the "
                f"ANOVA and the predicted point); raise --test-limit to at least {need}, or give terms= a "
                f"formula with fewer factors")

    # -- ask / tell -----------------------------------------------------------
    @property
    def done(self) -> bool:
        return self._finished

    def _pending(self) -> list[int]:
        return [i for i, h in enumerate(self._hashes) if h not in self.known]

    def propose(self, n: int) -> list[dict[str, Any]]:
        self._require_bound()
        out: list[dict[str, Any]] = []
        while len(out) < n and not self._finished:
            if self._batch is not None:
                pending = self._pending()
                if pending:
                    fresh = [i for i in pending if i not in self._handed]
                    if not fresh:
                        break  # waiting for results of the current design
                    for i in fresh[: n - len(out)]:
                        self._handed.add(i)
                        out.append(dict(self._batch[i]))
                    continue
            self._advance()
        return out

    def _advance(self) -> None:
        """Send the finished batch's values to the iteration and load its next batch."""
        try:
            if self._gen is None:
                self._gen = self._iterate()
                batch = next(self._gen)
            else:
                batch = self._gen.send([self.known[h] for h in self._hashes])
        except StopIteration:
            self._finished, self._batch, self._hashes = True, None, []
            return
        self._batch = [dict(c) for c in batch]
        self._hashes = [self.hash(c) for c in self._batch]
        self._requested.update(self._hashes)
        self._handed = set()

    # -- the iteration (Figure 2) ---------------------------------------------
    def _iterate(self) -> Generator[Batch, list[float], None]:
        whole = SubSpace(self.space)  # its count promises a listing (the listing is made while counting)
        count = whole.count(self.prediction_limit)
        self._subs = [SubSpace(self.space, table=None if count is None else whole.enumerate())]
        yield from self._steps()
        if self.rest == "neighborhood" and self.budget is not None:
            yield from self._explore(self.budget)
        elif self.rest == "model" and self.budget is not None:
            yield from self._model_rest(self.budget)
        elif self.rest in ("sample", "widen") and self.budget is not None:
            yield from self._spend_rest(self.budget)

    def _steps(self) -> Generator[Batch, list[float], None]:
        sub = self._subs[-1]
        carry: tuple[Batch, list[float]] = ([], [])   # data of a step that fixed nothing
        for k in range(self.n_steps):
            free = [f for f in self.factors if f.name not in self.fixed]
            record: dict[str, Any] = {"step": k + 1, "fixed_before": dict(self.fixed),
                                      "free": [f.name for f in free]}
            self.steps.append(record)
            if not free:
                record["note"] = "no free factor left"
                self.steps.pop()
                return
            # step 3: candidates and the D-optimal design ------------------------------
            candidates, exact = candidate_set(sub, self.rng, self.n_candidates, strategy=self.sampling,
                                              numeric=[f.name for f in free if f.kind == "numeric"])
            reused: list[tuple[dict[str, Any], float]] = []
            if self.reuse:  # earlier runs enter only as fixed rows: every new run is a point not asked for yet
                reused = self._reusable(sub, carry[0])
                candidates = [c for c in candidates if self.hash(c) not in self._requested]
            dropped = 0
            if self.avoid_failures:  # earlier runs (reused rows) are merged after: only new points are dropped
                floor = max(AVOID_KEEP_MIN, math.ceil(AVOID_KEEP_FRACTION * len(candidates)))
                kept = self._likely(candidates, floor)
                dropped, candidates = len(candidates) - len(kept), kept
            include = self._merge(candidates, [c for c, _ in reused])
            record["candidates"] = {"count": len(candidates), "exact": exact, "sampling": self.sampling}
            if dropped:
                record["candidates"]["dropped_likely_failures"] = dropped
            plan = self._plan(free, candidates, k, record, len(include))
            if plan is None:
                return
            model, coded, n = plan
            if len(include) >= n:  # keep room for one new run; which earlier points stay is drawn at random
                keep = sorted(int(i) for i in self.rng.permutation(len(include))[: n - 1])
                left_out = set(include) - {include[i] for i in keep}
                include, reused = [include[i] for i in keep], [reused[i] for i in keep]
                # the earlier runs left out leave the candidate set too (not chosen again as "new" runs)
                rows = [i for i in range(len(candidates)) if i not in left_out]
                where = {old: new for new, old in enumerate(rows)}
                candidates, coded = [candidates[i] for i in rows], coded[rows]
                include = [where[i] for i in include]
            design = fedorov(coded, n, self.rng, include=include)
            fixed_rows = set(include)
            configs = [candidates[i] for i in design.rows if i not in fixed_rows]
            record.update(model=model.formula, design_size=n, d_criterion=design.d,
                          fedorov_iterations=design.iterations, reused=len(reused))
            values = yield configs                                            # step 4
            self._data += list(zip(configs, values))
            configs, values = [c for c, _ in reused] + configs, [v for _, v in reused] + list(values)
            record["design"] = [{"config": c, "value": v} for c, v in zip(configs, values)]
            data_c, data_v = carry[0] + configs, carry[1] + list(values)
            ok = [i for i, v in enumerate(data_v) if math.isfinite(v)]
            record["failed"] = len(data_v) - len(ok)
            ok_c, ok_v = [data_c[i] for i in ok], [data_v[i] for i in ok]
            # step 5: ANOVA screening ----------------------------------------------------
            analysed = self._analyse(model, ok_c, ok_v, record)
            if analysed is None:
                carry = (data_c, data_v)
                continue
            model, sig_factors, ok_v = analysed
            if not sig_factors:
                record["note"] = (f"no factor significant at Pr(>F) < {self.significance}: nothing fixed; "
                                  "these points join the next step's analysis")
                carry = (data_c, data_v)
                continue
            carry = ([], [])
            # steps 6-8: refit on the significant factors, predict, fix -------------------
            pred_model = model.restricted_to(sig_factors)
            if self.interactions == "significant":
                pred_model = self._with_interactions(pred_model, sig_factors, ok_c, record)
            pfit = fit(pred_model, ok_c, ok_v)
            record["prediction_model"] = pred_model.formula
            record["coefficients"] = pfit.coefficients
            record["fitted"] = [[float(p), float(v)] for p, v in zip(pfit.predict(ok_c), ok_v)]
            pool = self._prediction_set(sub, ok_c)
            predicted = pfit.predict(pool)
            best = pool[int(np.argmin(predicted))]
            levels = {name: best[name] for name in sig_factors}
            record.update(predicted_config=best, predicted_value=float(np.min(predicted)),
                          prediction_pool=len(pool), fixed=levels)
            value = yield [best]
            self._data.append((best, value[0]))
            record["predicted_measured"] = value[0]
            if self.levels == "checked":
                levels = self._checked_levels(sub, sig_factors, levels, value[0], record)
                record["fixed"] = levels
            self.fixed.update(levels)
            sub = sub.with_fixed(levels)
            self._subs.append(sub)

    def _with_interactions(self, model: Model, names: list[str], configs: Batch, record: dict[str, Any]) -> Model:
        """``model`` plus the two-factor interactions of the significant numeric factors (effect heredity).

        Pairs are added in the factors' order while the fit keeps
        ``INTERACTION_RESIDUAL_DF`` residual degrees of freedom; a pair the
        runs cannot separate from the other terms (aliased) is dropped.  The
        added terms are listed in the step's record (the report shows them).
        """
        numeric = [f for f in self.factors if f.name in names and f.kind == "numeric" and f.n_levels >= 2]
        pairs = [f"{a.var}:{b.var}" for i, a in enumerate(numeric) for b in numeric[i + 1:]]
        if not pairs:
            return model
        out = Model(model.response, list(model.terms), model.factors)
        for term in pairs:
            if out.width() + 1 > len(configs) - INTERACTION_RESIDUAL_DF:
                break
            out = Model(out.response, out.terms + [term], out.factors)
        if len(out.terms) == len(model.terms):
            return model
        x, _, slices = model_matrix(out, configs)
        out, aliased = drop_aliased(out, x, slices)
        added = [t for t in out.terms if t not in model.terms]
        record["interactions"] = {"added": added, "aliased": [t for t in aliased if t in pairs]}
        return out

    def _reusable(self, sub: SubSpace, pooled: Batch) -> list[tuple[dict[str, Any], float]]:
        """Earlier successful runs of this sub-space not already pooled into this step.

        Appendix E, Sec. IV-B: "we could have reused some of the 12
        experiments from the previous step to reduce the size of the new
        design"; they join the design as fixed rows (Fedorov's ``include``).
        """
        taken = {self.hash(c) for c in pooled}
        out: dict[str, tuple[dict[str, Any], float]] = {}
        for c, v in self._data:
            h = self.hash(c)
            if math.isfinite(v) and h not in taken and sub.is_valid(c):
                out.setdefault(h, (c, v))
        return list(out.values())

    def _merge(self, candidates: Batch, extra: Batch) -> list[int]:
        """Indices of ``extra`` in ``candidates`` (appended where missing)."""
        index = {self.hash(c): i for i, c in enumerate(candidates)}
        out = []
        for c in extra:
            h = self.hash(c)
            if h not in index:
                index[h] = len(candidates)
                candidates.append(dict(c))
            out.append(index[h])
        return out

    def _checked_levels(self, sub: SubSpace, names: list[str], levels: dict[str, Any], value: float,
                        record: dict[str, Any]) -> dict[str, Any]:
        """Step 8 checked by measurement: the prediction against the best measured point of the sub-space.

        Appendix G (Sec. 1) argues for "being able to revert" a step whose
        decision the logs contradict; a user reading the step's report would
        not fix levels whose measured configuration is worse than a design
        point the same step measured.  The levels of the better one are fixed.
        """
        seen = [(v, c) for c, v in self._data if math.isfinite(v) and sub.is_valid(c)]
        if not seen:
            return levels
        v_best, c_best = min(seen, key=lambda t: t[0])
        if math.isfinite(value) and value <= v_best:
            return levels
        record["levels_from"] = (f"the best measured point of the sub-space ({v_best:.6g}); the predicted "
                                 f"configuration measured {value:.6g}")
        return {name: c_best[name] for name in names}

    def _spend_rest(self, budget: int) -> Generator[Batch, list[float], None]:
        """The budget left after the steps: unmeasured points of the last sub-space.

        Section III, step 8: with discrete factors "neighborhood exploration
        might be needed to find levels that minimize the response around
        predicted levels".  The factors DLMT fixed stay fixed (every later
        proposal respects them); the free ones are drawn uniformly from the
        valid sub-space, which is also Section IV-B's fallback (random
        sampling) for factors the ANOVA cannot tell apart.  The paper's DLMT
        left this budget unused (54.84 of 125 points on the Laplacian);
        ``rest="stop"`` keeps that behaviour (and is what an arm of a bandit
        should use, so the bandit spends the rest on its other arms).
        """
        subs = self._subs[::-1] if self.rest == "widen" else self._subs[-1:]
        for depth, sub in enumerate(subs):
            # a sampled (large) sub-space can return fewer new points than asked without being exhausted:
            # it is left only when a draw finds nothing new, so levels are released only then
            while (remaining := budget - self._spent()) > 0:
                picks = self._unmeasured(sub, remaining)
                if not picks:
                    break
                yield from self._rest_batch(sub, depth, picks, "sample")

    def _explore(self, budget: int) -> Generator[Batch, list[float], None]:
        """The budget left after the steps: neighbourhood exploration around the best measured point.

        Section III, step 8: "neighborhood exploration might be needed to find
        levels that minimize the response around predicted levels".  Each
        batch is the unmeasured neighbours (one free factor one level away;
        any other level of a categorical factor) of the best point measured
        in the sub-space; with none left, one uniform sample of the sub-space.
        When the sub-space is exhausted, the last step's levels are released
        (appendix G: reverting iterations) and the exploration goes on in the
        previous sub-space.
        """
        for depth, sub in enumerate(self._subs[::-1]):
            while (remaining := budget - self._spent()) > 0:
                seen = [(v, c) for c, v in self._data if math.isfinite(v) and sub.is_valid(c)]
                picks = self._neighbours(sub, min(seen, key=lambda t: t[0])[1]) if seen else []
                if picks and self.avoid_failures:  # never empties the neighbourhood: the most likely one stays
                    picks = self._likely(picks, 1)
                picks = picks[:remaining]
                if not picks:
                    picks = self._unmeasured(sub, 1)
                    if not picks:
                        break  # this sub-space is exhausted: release the last step's levels
                yield from self._rest_batch(sub, depth, picks, "neighbourhood")

    def _model_rest(self, budget: int) -> Generator[Batch, list[float], None]:
        """The budget left after the steps: one pick at a time by a Gaussian process's expected improvement.

        Not in the paper (docs/DOE.md, "rest='model'"): the steps' linear
        models are additive, and the factors they leave free interact.  A
        Gaussian process (Matern 5/2, the log of the response, fitted to every
        point DLMT measured, designs included) ranks the unmeasured points of
        the last sub-space, so the levels DLMT fixed stay fixed; with failures
        among the measured points the ranking is EI x P(success) of the run's
        failure model (whatever ``avoid_failures`` says: that option filters the
        designs; a model-led pick weighs by P(success) as BayesOpt's do; with
        ``feasibility=None``, EI alone).  When the sub-space is exhausted the last step's
        levels are released, as with ``"neighborhood"``.  The fit reads only
        the iteration's own data and draws from the technique's generator,
        so a resumed run replays the same picks.
        """
        for depth, sub in enumerate(self._subs[::-1]):
            while budget - self._spent() > 0:
                pool = self._unmeasured(sub, MODEL_REST_POOL)
                if not pool:
                    break  # this sub-space is exhausted: release the last step's levels
                yield from self._rest_batch(sub, depth, [self._ei_pick(pool)], "model")

    def _ei_pick(self, pool: Batch) -> dict[str, Any]:
        """The candidate of ``pool`` with the highest expected improvement (x P(success)); the first without data."""
        ok = [(c, v) for c, v in self._data if math.isfinite(v)]
        if len(ok) < 3:
            return pool[0]
        values = np.array([v for _, v in ok], dtype=float)
        y = np.log(values) if bool((values > 0).all()) else values
        scale = float(y.std()) or 1.0
        y = (y - float(y.mean())) / scale
        X = self._codes([c for c, _ in ok])
        Xp = self._codes(pool)
        with self._one_blas_thread():
            hyper = fit_hyperparameters(X, y, self.rng, restarts=1)
            mu, var = PoolPosterior.from_data(hyper, X, y, Xp).predict()
        score = expected_improvement_fast(mu, np.sqrt(var), float(y.min()))
        failures = self._failure_model()
        if failures is not None:
            score = score * self._p_success(failures, pool)
        return dict(pool[int(np.argmax(score))])

    def _rest_batch(self, sub: SubSpace, depth: int, picks: Batch, mode: str) -> Generator[Batch, list[float], None]:
        """Measure one batch of the rest phase in ``sub``; ``depth`` steps' levels released (for the report)."""
        if depth:  # appendix G: revert the last steps; proposals respect the levels still fixed
            self.fixed = dict(sub.fixed)
        log = self.rest_log or {"measured": 0, "best": None, "mode": mode}
        log.update(fixed=dict(sub.fixed), measured=log["measured"] + len(picks), released_steps=depth)
        self.rest_log = log
        values = yield picks
        self._data += list(zip(picks, values))
        finite = [v for v in values if math.isfinite(v)] + ([] if log["best"] is None else [log["best"]])
        log["best"] = min(finite) if finite else None

    def _neighbours(self, sub: SubSpace, centre: dict[str, Any]) -> Batch:
        """Valid, unrequested points one level away from ``centre`` in one free factor (random order)."""
        out: Batch = []
        for f in self.factors:
            if f.name in sub.fixed or f.levels is None:
                continue
            if f.kind == "numeric":
                order = sorted(f.levels, key=float)
                i = next((k for k, v in enumerate(order) if v == centre[f.name]), None)
                if i is None:
                    continue
                others = [order[k] for k in (i - 1, i + 1) if 0 <= k < len(order)]
            else:
                others = [v for v in f.levels if v != centre[f.name]]
            for v in others:
                c = {**centre, f.name: v}
                if self.hash(c) not in self._requested and sub.is_valid(c):
                    out.append(c)
        return [out[int(i)] for i in self.rng.permutation(len(out))]

    def _unmeasured(self, sub: SubSpace, remaining: int) -> Batch:
        """Up to ``remaining`` valid points of ``sub`` DLMT has not asked for, drawn uniformly."""
        if sub.count(self.prediction_limit) is not None:
            # hashed once per sub-space: the rest phase asks again after every batch
            table = self._enumerated.get(id(sub))
            if table is None:
                table = self._enumerated[id(sub)] = [(self.hash(c), c) for c in sub.enumerate()]
            pool = [c for h, c in table if h not in self._requested]
            order = [pool[int(i)] for i in self.rng.permutation(len(pool))]
            if self.avoid_failures:
                return [dict(c) for c in self._first_likely(order, remaining)]
            return [dict(c) for c in order[:remaining]]
        picks: Batch = []
        seen = set(self._requested)
        for c in sub.sample(self.rng, 4 * remaining):
            h = self.hash(c)
            if h not in seen:
                seen.add(h)
                picks.append(c)
        if self.avoid_failures:
            return self._first_likely(picks, remaining)
        return picks[:remaining]

    # -- the run's own failures (avoid_failures) ------------------------------------
    def _failure_model(self) -> FeasibilityModel | None:
        """P(success) learnt from this run's own measurements (``self._data``), None while none failed.

        None as well with ``feasibility=None`` (no classifier: ``rest="model"``
        then ranks by expected improvement alone).

        Only the iteration's own data, in the order it was measured: a resumed
        run replays the same data before the same decision, so it takes the
        same one (the technique's ``self.feasibility``, fed by ``restore`` with
        the whole history at once, would not).
        """
        if self.feasibility_kind is None or not any(not math.isfinite(v) for _, v in self._data):
            return None
        model = FeasibilityModel.for_space(self.space, kind=self.feasibility_kind)
        for c, v in self._data:
            model.add(self.encode(c), "OK" if math.isfinite(v) else "FAILED")
        return model

    def _p_success(self, model: FeasibilityModel, configs: Batch) -> np.ndarray:
        return model.p_success(self._codes(configs))

    def _codes(self, configs: Batch) -> np.ndarray:
        """``[encode(c) for c in configs]`` as an array, each point encoded once per run.

        Why: ``rest="model"`` ranks up to MODEL_REST_POOL points after every
        pick, mostly the same ones, and ``encode`` (a Python loop over the
        parameters) was more than half of each pick's time.  The key is the
        configuration's values with their types (so 1, 1.0 and True stay
        apart); ``encode`` reads nothing else, so the rows are the same
        (a point with an unhashable value is encoded every time).  The
        cache is emptied when it passes CODE_CACHE_LIMIT points (a sampled
        sub-space draws new points every time).
        """
        cache = self._code_cache
        rows = []
        for c in configs:
            try:
                values = tuple(map(c.__getitem__, self._names))
                key = (values, tuple(map(type, values)))
                row = cache.get(key)
            except (KeyError, TypeError):  # a parameter missing (encode says so) or an unhashable value
                rows.append(self.encode(c))
                continue
            if row is None:
                row = self.encode(c)
                if len(cache) >= CODE_CACHE_LIMIT:
                    cache.clear()
                cache[key] = row
            rows.append(row)
        return np.array(rows)

    def _likely(self, configs: Batch, keep_at_least: int) -> Batch:
        """``configs`` less those likely to fail (P(success) < AVOID_THRESHOLD), order kept.

        At least ``keep_at_least`` stay (all when fewer): the most likely ones.
        """
        model = self._failure_model()
        if model is None or not configs:
            return configs
        p = self._p_success(model, configs)
        keep = p >= AVOID_THRESHOLD
        need = min(len(configs), keep_at_least)
        if int(keep.sum()) < need:
            keep = np.zeros(len(configs), dtype=bool)
            keep[np.argsort(-p, kind="stable")[:need]] = True
        return [c for c, k in zip(configs, keep) if k]

    def _first_likely(self, order: Batch, n: int) -> Batch:
        """The first ``n`` of ``order`` not likely to fail; the first ``n`` when none passes."""
        model = self._failure_model()
        if model is None:
            return order[:n]
        out: Batch = []
        for start in range(0, len(order), 512):  # a chunk at a time: an enumerated sub-space may be large
            chunk = order[start:start + 512]
            p = self._p_success(model, chunk)
            out += [c for c, q in zip(chunk, p) if q >= AVOID_THRESHOLD]
            if len(out) >= n:
                return out[:n]
        return out[:n] if out else order[:n]

    def _spent(self) -> int:
        return len(self._requested)

    def _plan(self, free: list[Factor], candidates: Batch, k: int,
              record: dict[str, Any], reused: int = 0) -> tuple[Model, np.ndarray, int] | None:
        """Step 2/3 sizing: the richest model whose design fits the step's share of the budget.

        Fallbacks, in order (docs/DOE.md, "Bad input"): poorer automatic term
        sets; this step takes all the remaining budget; categorical factors
        with the most levels leave the model (they stay free, drawn at random
        in the designs).  None when even that cannot be paid for.
        """
        remaining = None if self.budget is None else self.budget - self._spent()
        shares = [None] if remaining is None else [remaining // (self.n_steps - k), remaining]
        fresh = len(candidates) - reused  # candidates that would be new runs (reused rows are in the set)
        if fresh <= 0:
            record["note"] = "no point of this sub-space is left to measure; stopped"
            return None
        dropped: list[str] = []
        factors = list(free)
        while True:
            for share in dict.fromkeys(shares):
                for model in self._models(factors):
                    x, _, slices = model_matrix(model, candidates)
                    model, aliased = drop_aliased(model, x, slices)
                    x, _, _ = model_matrix(model, candidates)
                    p = x.shape[1]
                    n = self.design_size if self.design_size is not None else p + self.extra_runs
                    n = min(n, len(candidates))
                    # cost of the step: the new runs (n less the reused rows kept, at most n - 1) and the
                    # predicted point; reused runs cost nothing, and new runs must exist among the candidates
                    while n > 0 and ((share is not None and n - min(reused, n - 1) + 1 > share)
                                     or n - min(reused, n - 1) > fresh):
                        n -= 1
                    if n >= p + 1 or (n >= p and p == len(candidates)):
                        record["aliased"] = aliased
                        record["dropped_categorical"] = dropped
                        return model, code_columns(x), n
            cats = [f for f in factors if f.kind == "categorical"]
            if not cats:
                record["note"] = (f"the remaining budget ({remaining}) cannot pay for a design; stopped"
                                  if fresh > 0 else "no point of this sub-space is left to measure; stopped")
                return None
            widest = max(cats, key=lambda f: f.n_levels)
            factors.remove(widest)
            dropped.append(widest.name)

    def _models(self, factors: list[Factor]) -> list[Model]:
        if self._user is not None:
            model = self._user.restricted_to([f.name for f in factors])
            return [model] if model.terms else []
        if self.terms in DEGREES:
            return [auto_model(factors, self.terms)]
        return [auto_model(factors, d) for d in reversed(DEGREES)]

    def _analyse(self, model: Model, configs: Batch, values: list[float],
                 record: dict[str, Any]) -> tuple[Model, list[str], list[float]] | None:
        """Fit and screen; with too few successful runs, a poorer model (None: nothing to analyse).

        Returns the model tested, the significant factors and the response as
        analysed (transformed when the homoscedasticity check asked for it;
        every transform is increasing, so the model's minimum is the same
        configuration's on either scale).
        """
        tries = [model] + [m for m in self._models(model.factors) if m.width() < model.width()]
        for m in tries:
            if not m.terms or len(configs) < 2:
                continue
            x, _, slices = model_matrix(m, configs)
            m, _ = drop_aliased(m, x, slices)
            if not m.terms or len(configs) < model_matrix(m, configs)[0].shape[1] + 1:
                continue
            values = self._transformed(m, configs, values, record)
            f = fit(m, configs, values)
            rows = anova(f)
            if not rows:
                continue
            sig_terms, sig_factors = screen(m, rows, self.significance)
            record.update(analysed_model=m.formula, r2=f.r2, significant_terms=sig_terms,
                          significant_factors=sig_factors,
                          anova=[{"term": r.term, "df": r.df, "sum_sq": r.sum_sq, "F": r.f, "p": r.p} for r in rows])
            return m, sig_factors, values
        record["note"] = (f"{len(configs)} successful runs are too few to fit and test any model; "
                          "nothing fixed, the points join the next step's analysis")
        return None

    def _transformed(self, model: Model, configs: Batch, values: list[float],
                     record: dict[str, Any]) -> list[float]:
        """Section III's homoscedasticity check and correction by a power transformation.

        ``boxcox``: the score test for non-constant variance (R car's
        ``ncvTest``) at the screening level; when it rejects, the Box-Cox
        exponent of greatest likelihood for the model (car's
        ``powerTransform``) is applied.  ``log``: always log.  Responses with a
        value <= 0 (a maximised objective seen negated) are analysed as measured.
        """
        if self.transform == "none":
            return values
        if min(values) <= 0:
            record["transform"] = "none (a response <= 0 cannot be power-transformed)"
            return values
        if self.transform == "log":
            record["transform"] = "log"
            return [float(v) for v in np.log(values)]
        if self.transform == "checked-boxcox":
            p = nonconstant_variance_p(model, configs, values)
            record["ncv_p"] = p
            if p is None or p >= self.significance:
                record["transform"] = "none (no evidence of non-constant variance)"
                return values
        lam = boxcox_lambda(model, configs, values)
        record["transform"] = f"Box-Cox lambda = {lam:g}"
        return values if lam == 1.0 else [float(v) for v in boxcox(values, lam)]

    def _prediction_set(self, sub: SubSpace, measured: Batch) -> Batch:
        """Where step 8 looks for the model's minimum: the valid sub-space, or a sample of it."""
        if sub.count(self.prediction_limit) is not None:
            return sub.enumerate()
        pool = sub.sample(self.rng, self.prediction_samples)
        return pool + [dict(c) for c in measured]

    # -- reporting --------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        from techniques.doe.report import report_files

        state = super().state_dict()
        state.update(fixed=dict(self.fixed), steps=self.steps, done=self._finished,
                     report_files=report_files(self))
        return state
