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
the budget still unspent goes to uniform samples of the last sub-space
(``rest="sample"``; step 8's "neighborhood exploration"), then the technique
is done; the run's answer is the best measured configuration.
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
from techniques.doe.design import (
    CANDIDATE_STRATEGIES,
    candidate_set,
    code_columns,
    fedorov,
)
from techniques.doe.factors import Factor, factors_of
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

__all__ = ["DLMT"]

Batch = list[dict[str, Any]]


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
    (``sample``: the budget left after the steps goes to the last sub-space;
    ``stop``: done after the steps, as in the paper and as a bandit arm should).
    """

    name: ClassVar[str] = "dlmt"
    summary: ClassVar[str] = ("D-optimal designs + ANOVA screening + linear models, fixing factors "
                              "step by step (Bruel et al., CCGRID'19)")

    def __init__(self, *, seed: int | None = None, steps: int = 4, design_size: int | None = None,
                 significance: float = 0.05, terms: str = "auto", candidates: int = 1000,
                 sampling: str = "uniform", extra_runs: int = 4, prediction_limit: int = 20_000,
                 prediction_samples: int = 5000, transform: str = "none", rest: str = "sample",
                 **options: Any) -> None:
        super().__init__(seed=seed, **options)
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
        if rest not in ("sample", "stop"):
            raise TechniqueError(f"dlmt: rest={rest!r}; choose 'sample' (spend the budget left after the steps "
                                 "around the fixed levels) or 'stop' (done after the steps, as in the paper)")
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

    # -- binding and bad input ------------------------------------------------
    def _on_bind(self) -> None:
        self.factors: list[Factor] = factors_of(self.space)
        self.fixed: dict[str, Any] = {}
        self.steps: list[dict[str, Any]] = []
        #: what the budget left after the steps bought (``rest="sample"``), for the report
        self.rest_log: dict[str, Any] | None = None
        self._gen: Generator[Batch, list[float], None] | None = None
        self._batch: Batch | None = None
        self._hashes: list[str] = []
        self._handed: set[int] = set()
        self._requested: set[str] = set()
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
        count = SubSpace(self.space).count(self.prediction_limit)
        self._subs = [SubSpace(self.space, table=None if count is None else [dict(c) for c in self.space.enumerate_valid()])]
        yield from self._steps()
        if self.rest == "sample" and self.budget is not None:
            yield from self._spend_rest()

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
            record["candidates"] = {"count": len(candidates), "exact": exact, "sampling": self.sampling}
            plan = self._plan(free, candidates, k, record)
            if plan is None:
                return
            model, coded, n = plan
            design = fedorov(coded, n, self.rng)
            configs = [candidates[i] for i in design.rows]
            record.update(model=model.formula, design_size=n, d_criterion=design.d,
                          fedorov_iterations=design.iterations)
            values = yield configs                                            # step 4
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
            record["predicted_measured"] = value[0]
            self.fixed.update(levels)
            sub = sub.with_fixed(levels)
            self._subs.append(sub)

    def _spend_rest(self) -> Generator[Batch, list[float], None]:
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
        sub = self._subs[-1]
        remaining = self.budget - self._spent()
        picks: Batch = []
        if remaining > 0:
            if sub.count(self.prediction_limit) is not None:
                pool = [c for c in sub.enumerate() if self.hash(c) not in self._requested]
                picks = [pool[int(i)] for i in self.rng.permutation(len(pool))[:remaining]]
            else:
                seen = set(self._requested)
                for c in sub.sample(self.rng, 4 * remaining):
                    h = self.hash(c)
                    if h not in seen and len(picks) < remaining:
                        seen.add(h)
                        picks.append(c)
        if picks:
            self.rest_log = {"fixed": dict(sub.fixed), "measured": len(picks), "best": None}
            values = yield picks
            finite = [v for v in values if math.isfinite(v)]
            self.rest_log["best"] = min(finite) if finite else None

    def _spent(self) -> int:
        return len(self._requested)

    def _plan(self, free: list[Factor], candidates: Batch, k: int,
              record: dict[str, Any]) -> tuple[Model, np.ndarray, int] | None:
        """Step 2/3 sizing: the richest model whose design fits the step's share of the budget.

        Fallbacks, in order (docs/DOE.md, "Bad input"): poorer automatic term
        sets; this step takes all the remaining budget; categorical factors
        with the most levels leave the model (they stay free, drawn at random
        in the designs).  None when even that cannot be paid for.
        """
        remaining = None if self.budget is None else self.budget - self._spent()
        shares = [None] if remaining is None else [remaining // (self.n_steps - k), remaining]
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
                    if share is not None:
                        n = min(n, share - 1)
                    if n >= p + 1 or (n >= p and p == len(candidates)):
                        record["aliased"] = aliased
                        record["dropped_categorical"] = dropped
                        return model, code_columns(x), n
            cats = [f for f in factors if f.kind == "categorical"]
            if not cats:
                record["note"] = f"the remaining budget ({remaining}) cannot pay for a design; stopped"
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
