"""Technique variants of the session-14 grid-mode screen in docs/TECHNIQUES.md (not part of the package).

Run with bench_search as module:attr, PYTHONPATH=docs/bench_search_issue18 ...
--techniques default,variants_s14:DefThr07,variants_s14:DefThr07Exp02.
They set BayesOpt's ``feasible_threshold`` / ``explore_failures`` inside the default ensemble.
"""
from techniques.default import DefaultEnsemble
from variants_s13 import _set  # sets an option on the ensemble's BayesOpt arm (same folder)


class DefThr07(DefaultEnsemble):
    name = "default-thr0.7"

    def __init__(self, *, seed=None, **options):
        super().__init__(seed=seed, **options)
        _set(self, feasible_threshold=0.7)


class DefThr07Exp02(DefaultEnsemble):
    name = "default-thr0.7-exp0.02"

    def __init__(self, *, seed=None, **options):
        super().__init__(seed=seed, **options)
        _set(self, feasible_threshold=0.7, explore_failures=0.02)
