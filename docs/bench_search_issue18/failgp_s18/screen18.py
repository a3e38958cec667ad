"""Issue 18 screen (session 18): the default ensemble with BayesOpt's failures_in_gp set."""
from techniques.bayes_opt import BayesOpt
from techniques.default import DefaultEnsemble


class _Variant(DefaultEnsemble):
    mode = "always"

    def __init__(self, **kw):
        super().__init__(**kw)
        for arm in self.arms:
            if isinstance(arm, BayesOpt):
                arm.failures_in_gp = self.mode


class DefaultFailGP(_Variant):
    name = "default+failgp"
    mode = "always"


class DefaultFailGPCommon(_Variant):
    name = "default+failgp-common"
    mode = "common"
