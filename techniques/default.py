"""The default ensemble: an AUC bandit over arms chosen by measurement.

The arms were chosen by replaying the five exhaustively measured GPU spaces
of ``../shared/data/spaces`` and the 4-D Rosenbrock benchmark through the
in-memory harness (see docs/TECHNIQUES.md, "Choosing the default", for the
numbers and the commands), not by habit: the two population arms that did
best on the discrete GPU spaces (differential evolution, the DEAP GA), a
model-based arm (Gaussian-process Bayesian optimization after Willemsen et
al., PMBS 2021) that learns from every arm's results and is strongest where
the budget is a few hundred evaluations, and a local-refinement arm
restarted from the best (Nelder-Mead) that polishes continuous optima.
Nelder-Mead is a method for continuous functions (Nelder & Mead 1965); on a
space without a continuous parameter it measured worse than random search
and drew the bandit into poor regions, so there it is left out (a rule
about the kind of parameters, not about any one space).

Who proposes: on a space whose parameters are all discrete the model leads
(every proposal is the GP's, or after its initial design its partner's,
while it is active; the bandit over the other arms takes over only once
the model retires on a cheap objective or runs out of candidates).
Measured at 25 seeds on the replay spaces, the GP alone
scored 0.472 against 0.423 for the bandit that shares the budget among the
arms; giving the population arms a fixed 10% or 25% share, or handing over
when the GP stalls, scored lower too (docs/TECHNIQUES.md, "Round 4").  On a
space with a continuous parameter the AUC bandit shares the trials among
all arms, as before: there a GP over a sampled pool cannot polish an optimum
to 1e-6, and Nelder-Mead, which can, must get trials (4-D Rosenbrock).

A partner in the lead (option ``partner``, ``"TPE"`` by default since
session 30): a second model-led technique (:mod:`techniques.tpe`) with
which the GP shares the lead after its initial design, the AUC bandit's
own rule (credit = a new best) choosing pick by pick which of the two
proposes.  Together with the calibrated failure forest (below) it scored
0.615 against 0.538 (file mode) and 0.758 against 0.682 (grid mode) at 25
seeds on the five replay spaces, failing less after the first fifth of a
grid-mode run on all five, under a rule written before the run (it lost
on conv A100 in file mode and on conv W7800 in grid mode, 0.08 each, and
on W7800, the smallest budget, by 0.17 in file mode on other seeds;
session 31's check of the partner sitting out under 100 evaluations,
``partner_min_budget=100``, gained in file mode and lost in grid mode
there, within a standard error, and was not adopted);
apart, each had failed one part of its rule in session 29
(docs/TECHNIQUES.md, "The partner and the calibrated forest together").
``partner=None`` gives the GP the lead alone, as before.  While the
partner shares the lead the GP ranks only candidates the failure model
gives P(success) >= 0.7 (``PARTNERED_MODEL_THRESHOLD``, session 31): at 25
unread seeds in grid mode that spent less of the budget after its first
fifth on failures on all five replay spaces (conv A100 0.170 against
0.185, pnpoly 0.109 against 0.145) at the same mean scores within 0.01
(docs/TECHNIQUES.md, "A stricter filter for the GP beside its partner").
Alone the GP keeps 0.5: there 0.7 lost pnpoly's optimum on the failure
boundary (session 14); beside TPE, which closes on that boundary, it
does not.
When none of a batch of TPE's candidates is likely to run, TPE draws up
to four more batches before ranking them all (``PARTNER_REDRAWS``,
session 32): at 25 unread seeds in grid mode conv A100's late failures
fell from 0.179 to 0.108 and A6000's from 0.145 to 0.078, means level
(docs/TECHNIQUES.md, "TPE draws again when no candidate is likely to
run").
Beside TPE the GP also makes no exploring picks (``PARTNERED_MODEL_EXPLORE``,
session 32; docs/TECHNIQUES.md, "The GP stops its exploring picks beside
TPE"); alone it keeps BayesOpt's 0.05.

The GP's inputs (``model_features``, ``MODEL_FEATURES``, "divisibility" since
session 34): besides each parameter's value index, per integer parameter
whether a level is a power of two and its number of factors of two
(:mod:`techniques.gp_features`).  On unread seeds it scored 0.684 against
0.584 in file mode and 0.780 against 0.736 in grid mode on the five replay
spaces, under a rule written first (docs/TECHNIQUES.md, "Powers of two as
GP inputs"); ``model_features="unit"`` gives the previous inputs.

The model's initial design is screened (``model_screen_design``,
``MODEL_SCREEN_DESIGN``, since session 35): once the failure model has
seen a success and a failure, a design point it expects to fail is
replaced by the likely point farthest from those already chosen.  On
unread seeds, with the grid searched (constraints unknown), the five-space
mean rose from 0.359 to 0.413 scored on the file mode's scale and from
0.818 to 0.858 on the grid's own, and from 0.620 to 0.641 in file mode
(docs/TECHNIQUES.md, "The initial design screened by the failure model").
The design has at most 10 points (``model_initial_cap``,
``MODEL_INITIAL_CAP``, since session 37; BayesOpt alone keeps the paper's
20): while it is measured the run is random search.  Under a rule written
first it cost nothing measurable on unread seeds and gained nothing beyond
noise either (file mode +0.004 ± 0.011; docs/TECHNIQUES.md, "A ten-point
initial design").

Failures: the ensemble learns one failure model from every trial
(:mod:`techniques.feasibility`, a random forest whose votes are mapped to
probabilities by Platt scaling, ``feasibility="calibrated"``; the other
techniques default to the plain forest) and shares it with its
arms: BayesOpt weighs expected improvement by P(success), the population
and simplex arms answer likely failures locally (docs/TECHNIQUES.md,
"Learning where configurations fail").
"""

from __future__ import annotations

from typing import Any, ClassVar

from ensemble.errors import TechniqueError
from ensemble.technique import Technique
from techniques.bandit import AUCBandit

__all__ = ["CONTINUOUS_ONLY", "DEFAULT_ARMS", "DEFAULT_ENSEMBLE_FEASIBILITY", "DEFAULT_FILL", "DEFAULT_PARTNER",
           "MODEL_COMPUTE_SHARE", "MODEL_FEATURES", "MODEL_INITIAL_CAP", "MODEL_SCREEN_DESIGN", "MODEL_SPREAD_REFITS",
           "PARTNERED_MODEL_EXPLORE", "PARTNERED_MODEL_THRESHOLD", "PARTNER_MIN_BUDGET", "PARTNER_REDRAWS",
           "DefaultEnsemble"]

#: the arms of the default ensemble (see docs/TECHNIQUES.md for the measurement)
DEFAULT_ARMS: tuple[str, ...] = ("DifferentialEvolution", "GA", "BayesOpt", "NelderMead")

#: BayesOpt retires once its own compute exceeds this share of the evaluations' cost
#: (docs/TECHNIQUES.md, "The cost of the model"; 12 ms -> 0.79 ms per trivial trial)
MODEL_COMPUTE_SHARE: float | None = 0.25

#: with several workers, whether the model spreads its refits over results (BayesOpt ``spread_refits``):
#: "auto" spreads them only once refits in one piece would hold the workers up, where the model used
#: to retire (docs/TECHNIQUES.md, "Many workers")
MODEL_SPREAD_REFITS: bool | str = "auto"
#: with several workers, the technique that proposes what the arms leave unfilled (MetaTechnique.propose).
#: None by default: "NormalGreedyMutation" doubled the throughput of 32 ranks but failed one part of its
#: screen (the model's share, docs/BENCHMARKS.md "Filling the queue"); turn it on with
#: --technique-option fill=NormalGreedyMutation
DEFAULT_FILL: str | None = None
#: the technique that shares the lead with the model on all-discrete spaces (None: the model leads alone).
#: "TPE" since session 30, adopted together with DEFAULT_ENSEMBLE_FEASIBILITY under a rule written first
#: (docs/TECHNIQUES.md, "The partner and the calibrated forest together"); turn it off with
#: --technique-option partner=null
DEFAULT_PARTNER: str | None = "TPE"
#: the default ensemble's failure model (techniques.feasibility): the forest with Platt-scaled votes, adopted
#: with the partner (same section); other techniques keep techniques.base.DEFAULT_FEASIBILITY
DEFAULT_ENSEMBLE_FEASIBILITY: str | None = "calibrated"
#: the P(success) below which the model (BayesOpt ``feasible_threshold``) does not rank a candidate, while a
#: partner shares its lead: 0.7 since session 31, under a rule written for a change that cuts failures
#: (docs/TECHNIQUES.md, "A stricter filter for the GP beside its partner"). The GP leading alone keeps
#: BayesOpt's 0.5: there 0.7 cost pnpoly its boundary optimum (session 14); beside it TPE, filtering at 0.5,
#: keeps that boundary within reach
PARTNERED_MODEL_THRESHOLD: float = 0.7
#: the share of the model's picks ranked over every candidate, not only the likely ones (BayesOpt
#: ``explore_failures``), while a partner shares its lead: 0 since session 32, under a rule written before the
#: runs (docs/TECHNIQUES.md, "The GP stops its exploring picks beside TPE"): late, those picks failed 69 of 71
#: times (conv A100), and TPE, filtering at 0.5, keeps sampling near the failure boundary. Alone the GP keeps
#: BayesOpt's 0.05, the guard that a wrong failure model cannot shut out an optimum on the boundary
PARTNERED_MODEL_EXPLORE: float = 0.0
#: the extra candidate draws of the partner (TPE ``redraws``) when none of a fit's candidates is likely to run:
#: 4 since session 32, under a rule written before the runs (docs/TECHNIQUES.md, "TPE draws again when no
#: candidate is likely to run"); TPE on its own keeps 0, since only the partner was measured; turn it off with
#: --technique-option partner_redraws=0
PARTNER_REDRAWS: int = 4
#: under this budget (when the run's is known) the partner sits out and the model leads alone; None: any budget
#: (docs/bench_search_issue18/smallbudget_s31/rule.md)
PARTNER_MIN_BUDGET: int | None = None
#: the inputs of the model arm's GP (BayesOpt ``features``): "divisibility" adds, per integer parameter, whether
#: a level is a power of two and its factors of two (techniques.gp_features); decided in session 34 under a rule
#: written before the run on unread seeds (docs/TECHNIQUES.md, "Powers of two as GP inputs"); "unit" is the
#: previous default, --technique-option model_features=unit
MODEL_FEATURES: str = "divisibility"
#: whether the model arm screens its initial design with the failure model (BayesOpt ``screen_design``): True
#: since session 35, under a rule written before the runs on unread seeds (docs/TECHNIQUES.md, "The initial
#: design screened by the failure model"); turn it off with --technique-option model_screen_design=false
MODEL_SCREEN_DESIGN: bool = True
#: the most points in the model arm's initial design (BayesOpt ``initial_cap``; the design is
#: min(cap, max(5, budget // 5))): 10 since session 37, under a rule written before the runs on unread seeds
#: (docs/TECHNIQUES.md, "A ten-point initial design"); BayesOpt's own 20 with --technique-option model_initial_cap=20
MODEL_INITIAL_CAP: int = 10
#: arms that only make sense when the space has a continuous (Float / LogFloat) parameter
CONTINUOUS_ONLY: frozenset[str] = frozenset({"NelderMead"})


class DefaultEnsemble(AUCBandit):
    """AUC bandit (W=500, C=0.1) over the measured default arms; the model leads on discrete spaces.

    ``model_led``: None (default) = the rule above (the model leads exactly
    when no parameter is continuous); True / False force it either way.
    ``partner``: the technique that shares the lead with the model (a name or
    a technique; ``DEFAULT_PARTNER``, "TPE"; None: the model leads alone).  It
    takes part only while the model leads, and steps aside with it when the
    model retires, so a space with a continuous parameter and a cheap
    objective run exactly as without it.
    ``feasibility``: the failure model the arms share
    (``DEFAULT_ENSEMBLE_FEASIBILITY``, "calibrated"; "forest", "monotone", "products",
    "gp", "kernel", or None for none).
    ``model_threshold``: the P(success) below which the model does not rank
    a candidate (BayesOpt ``feasible_threshold``); None (default): 0.7
    (``PARTNERED_MODEL_THRESHOLD``) while a partner shares the lead,
    BayesOpt's 0.5 where there is none or it sits out (a space with a
    continuous parameter, a budget under ``partner_min_budget``).
    ``model_features``: the model's GP inputs (BayesOpt ``features``);
    ``MODEL_FEATURES``, "divisibility"; "unit" for the value indices only.
    ``model_screen_design``: whether the model's initial design skips
    points the failure model expects to fail (BayesOpt ``screen_design``;
    ``MODEL_SCREEN_DESIGN``).
    ``model_initial_cap``: the most points in the model's initial design
    (BayesOpt ``initial_cap``; ``MODEL_INITIAL_CAP``, 10): while it is
    measured the run is random search, so a shorter one hands the model
    the lead earlier.
    ``model_explore``: the share of the model's picks ranked over every
    candidate, not only the likely ones (BayesOpt ``explore_failures``);
    None (default): 0 (``PARTNERED_MODEL_EXPLORE``) while a partner shares
    the lead, BayesOpt's 0.05 where there is none or it sits out.
    ``partner_redraws``: the partner's extra candidate draws when none of
    a fit's candidates is likely to run (TPE ``redraws``); None (default):
    ``PARTNER_REDRAWS``, 4, for a partner given by name, its own setting for
    one given as a Technique; 0 ranks them all at once, as before session 32.
    ``partner_min_budget``: when the run's budget is known and under this,
    the partner sits out and the model leads alone (threshold 0.5 unless
    ``model_threshold`` says otherwise); None: the partner joins at any
    budget.

    C = 0.1 rather than OpenTuner's 0.05: with 0.05, on 4-D Rosenbrock the
    arm that keeps earning small improvements (DE or GA) starved Nelder-Mead
    in 3 of 10 seeds; 0.1 gave 10 of 10 at 1e-6 and the same GPU-space mean
    within noise (docs/TECHNIQUES.md).
    """

    name: ClassVar[str] = "default"
    summary: ClassVar[str] = ("the default ensemble: a GP model and TPE lead on discrete spaces, "
                              "an AUC bandit over arms chosen by replay measurement otherwise")

    def __init__(self, *, seed: int | None = None, window: int = 500, c: float = 0.1,
                 model_led: bool | None = None, fill: str | Technique | None = DEFAULT_FILL,
                 partner: str | Technique | None = DEFAULT_PARTNER,
                 feasibility: str | None = DEFAULT_ENSEMBLE_FEASIBILITY, model_threshold: float | None = None,
                 model_features: str = MODEL_FEATURES, model_screen_design: bool = MODEL_SCREEN_DESIGN,
                 model_explore: float | None = None, model_initial_cap: int = MODEL_INITIAL_CAP,
                 partner_min_budget: int | None = PARTNER_MIN_BUDGET, partner_redraws: int | None = None,
                 **options: Any) -> None:
        if partner is not None and not isinstance(partner, (str, Technique)):
            raise TechniqueError(f"default: partner must be a technique name, a Technique or None (the model "
                                 f"leads alone); got {partner!r}, e.g. partner='TPE' or partner=None")
        arms = DEFAULT_ARMS if partner is None else (*DEFAULT_ARMS, partner)
        super().__init__(seed=seed, arms=arms, window=window, c=c, fill=fill, feasibility=feasibility, **options)
        from techniques.bayes_opt import BayesOpt

        if model_threshold is not None and not (isinstance(model_threshold, (int, float))
                                                and 0.0 < float(model_threshold) < 1.0):
            raise TechniqueError(f"default: model_threshold must be a probability in (0, 1) or None (0.7 with a "
                                 f"partner, 0.5 without); got {model_threshold!r}, e.g. model_threshold=0.5")
        if partner_min_budget is not None and (isinstance(partner_min_budget, bool)
                                               or not isinstance(partner_min_budget, int) or partner_min_budget < 1):
            raise TechniqueError(f"default: partner_min_budget must be a positive number of evaluations or None "
                                 f"(the partner joins at any budget); got {partner_min_budget!r}, e.g. 100")
        if partner_redraws is not None and (isinstance(partner_redraws, bool) or not isinstance(partner_redraws, int)
                                            or partner_redraws < 0):
            raise TechniqueError(f"default: partner_redraws must be a whole number >= 0 (the partner's extra "
                                 f"candidate draws; 0 turns them off) or None; got {partner_redraws!r}, e.g. 4")
        if model_explore is not None and (isinstance(model_explore, bool) or not isinstance(model_explore, (int, float))
                                          or not 0.0 <= float(model_explore) <= 1.0):
            raise TechniqueError(f"default: model_explore must be a share in [0, 1] or None (0 with a partner, "
                                 f"BayesOpt's 0.05 without); got {model_explore!r}, e.g. model_explore=0.05")
        from techniques.gp_features import FEATURES

        if model_features not in FEATURES:
            raise TechniqueError(f"default: model_features must be one of {', '.join(map(repr, FEATURES))} (the "
                                 f"model arm's GP inputs); got {model_features!r}, e.g. model_features='unit'")
        if not isinstance(model_screen_design, bool):
            raise TechniqueError(f"default: model_screen_design must be True or False (whether the model's initial "
                                 f"design skips points the failure model expects to fail); got "
                                 f"{model_screen_design!r}, e.g. model_screen_design=False")
        if isinstance(model_initial_cap, bool) or not isinstance(model_initial_cap, int) or model_initial_cap < 1:
            raise TechniqueError(f"default: model_initial_cap must be a whole number >= 1 (the most points in the "
                                 f"model's initial design); got {model_initial_cap!r}, e.g. model_initial_cap=20")
        self.partner_min_budget = partner_min_budget
        self._model_threshold = model_threshold
        self._model_explore = None if model_explore is None else float(model_explore)
        self._model_explore_alone = 0.05  # BayesOpt's own, read from the arm below
        if model_led not in (None, True, False):
            raise TechniqueError(f"default: model_led must be None (the model leads exactly on all-discrete "
                                 f"spaces), True or False; got {model_led!r}")
        self._model_led = model_led
        #: whether the model arm proposes every trial while it is active (set on bind)
        self.model_led = False
        #: index of the model arm (BayesOpt)
        self._model: int | None = None
        #: index of the arm that shares the lead with the model (None: none)
        self._partner: int | None = None if partner is None else len(DEFAULT_ARMS)
        for i, arm in enumerate(self.arms):
            if isinstance(arm, BayesOpt) and i != self._partner:
                self._model = i
                if arm.compute_share is None:
                    # the model steps aside once it costs more than a quarter of the measuring time
                    # (microsecond objectives); the other arms then take its trials
                    arm.compute_share = MODEL_COMPUTE_SHARE
                arm.features = model_features
                arm.screen_design = bool(model_screen_design)
                arm.initial_cap = model_initial_cap
                if arm.spread_refits is False:
                    arm.spread_refits = MODEL_SPREAD_REFITS
                    arm.spreading = MODEL_SPREAD_REFITS is True
                if model_threshold is not None:
                    arm.feasible_threshold = float(model_threshold)
                elif partner is not None:
                    arm.feasible_threshold = PARTNERED_MODEL_THRESHOLD
                self._model_explore_alone = arm.explore_failures
                if model_explore is not None:
                    arm.explore_failures = float(model_explore)
                elif partner is not None:
                    arm.explore_failures = PARTNERED_MODEL_EXPLORE
        if partner_redraws is None and isinstance(partner, str):
            partner_redraws = PARTNER_REDRAWS  # a partner given as a Technique keeps its own setting
        if partner_redraws is not None and self._partner is not None and hasattr(self.arms[self._partner], "redraws"):
            self.arms[self._partner].redraws = partner_redraws

    def _on_bind(self) -> None:
        super()._on_bind()
        from ensemble.space import Float, LogFloat

        continuous = any(isinstance(p, (Float, LogFloat)) for p in self.space.params)
        if not continuous:
            self.inactive = {i for i, label in enumerate(self.labels) if label in CONTINUOUS_ONLY}
        self.model_led = (not continuous) if self._model_led is None else self._model_led
        small = (self.budget is not None and self.partner_min_budget is not None
                 and int(self.budget) < self.partner_min_budget)
        # the partner shares the model's lead, nothing else; and it needs evaluations to learn from
        sits_out = not self.model_led or self._model is None or small
        if self._partner is not None:
            if sits_out:
                self.inactive = self.inactive | {self._partner}
            if self._model is not None and self._model_threshold is None:
                from techniques.base import FILTER_THRESHOLD

                # without the partner the model keeps BayesOpt's threshold: 0.7 was measured only beside it
                self.arms[self._model].feasible_threshold = (FILTER_THRESHOLD if sits_out
                                                             else PARTNERED_MODEL_THRESHOLD)
            if self._model is not None and self._model_explore is None:
                # likewise its exploring picks: turned off only where the partner samples the boundary
                self.arms[self._model].explore_failures = (self._model_explore_alone if sits_out
                                                           else PARTNERED_MODEL_EXPLORE)

    def _model_retired(self) -> bool:
        return self._model is not None and getattr(self.arms[self._model], "retired", None) is not None

    def _pick(self, blocked: set[int]) -> int | None:
        partner = self._partner
        if self.model_led and self._model is not None and not self._model_retired():
            model_ok = self._model not in blocked
            partner_ok = partner is not None and partner not in blocked
            if model_ok and partner_ok and getattr(self.arms[self._model], "initial_design_done", True):
                # the AUC bandit's rule, between the two leaders only
                return super()._pick(set(range(len(self.arms))) - {self._model, partner})
            if model_ok:
                return self._model
            if partner_ok:
                return partner
        # the model retired (or never led): the population arms, as without a partner
        return super()._pick(blocked if partner is None else blocked | {partner})

    def _takes_batch(self, arm: int) -> bool:
        # the leading model answers a whole batch in one call (MPI / parallel workers ask for many)
        return self.model_led and arm == self._model

    def state_dict(self) -> dict[str, Any]:
        state = {**super().state_dict(), "model_led": self.model_led}
        if self._partner is not None:
            state["partner"] = self.labels[self._partner]
        if self._model is not None:
            model = self.arms[self._model].state_dict()
            state["model"] = {k: model.get(k) for k in ("fits", "observations", "compute_seconds",
                                                        "setup_seconds", "evaluation_seconds", "retired",
                                                        "spread_since")}
        return state
