"""Technique variants used by the session-13 screens of docs/TECHNIQUES.md (not part of the package).

Run them with bench_search as module:attr, e.g. PYTHONPATH=docs/bench_search_issue18 ...
--techniques default,variants_s13:DefEps. DefPrior needs the lengthscale_prior option of the
screen (not committed), DefNoLogs the forest_log_features.patch.
"""
from techniques.default import DefaultEnsemble
from techniques.bayes_opt import BayesOpt


def _set(ens, **kw):
    for arm in ens.arms:
        if isinstance(arm, BayesOpt):
            for k, v in kw.items():
                setattr(arm, k, v)


class DefPrior(DefaultEnsemble):
    name = "default-prior"

    def __init__(self, *, seed=None, **options):
        super().__init__(seed=seed, **options)
        _set(self, lengthscale_prior="dimension-scaled")


class DefNoFeas(DefaultEnsemble):
    name = "default-nofeas"

    def __init__(self, *, seed=None, **options):
        super().__init__(seed=seed, feasibility=None, **options)


class DefObserved(DefaultEnsemble):
    name = "default-observed"

    def __init__(self, *, seed=None, **options):
        super().__init__(seed=seed, **options)
        _set(self, incumbent="observed")


class DefNoTail(DefaultEnsemble):
    name = "default-notail"

    def __init__(self, *, seed=None, **options):
        super().__init__(seed=seed, **options)
        _set(self, exploit_tail=0.0)


class EpsBO(BayesOpt):
    name = "BayesOpt-eps"
    eps = 0.1

    def _ei_batch(self, k):
        if self.rng.random() < self.eps:
            c = self._random_unseen()
            if c is not None:
                h = self.hash(c)
                i = self._pool_index.get(h)
                if i is not None:
                    self._avail[i] = False
                    self._rows[h] = self._gp.add(self._Xp[i], float(self._gp.predict_at(self._Xp[i])[0])) if self._gp is not None else None
                self._pending[h] = c
                return [c]
        return super()._ei_batch(k)


class DefEps(DefaultEnsemble):
    name = "default-eps"

    def __init__(self, *, seed=None, **options):
        super().__init__(seed=seed, **options)
        for arm in self.arms:
            if isinstance(arm, BayesOpt):
                arm.__class__ = EpsBO


class DefNoLogs(DefaultEnsemble):
    """The default with the forest's features as before today (index pairs only)."""
    name = "default-nologs"

    def _on_bind(self):
        super()._on_bind()
        models = {id(m): m for m in [self.feasibility] + [getattr(a, 'feasibility', None) for a in self.arms] if m is not None}
        for m in models.values():
            m._log_values = []
