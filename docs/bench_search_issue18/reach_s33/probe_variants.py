"""Session 33 development probes (read seeds, no decision): the GP on a log scale of numeric values spanning >= 4x (LogDefault), and a uniform random initial design instead of the maximin Latin hypercube (RandInitDefault). Run with docs/bench_search_issue18/reach_s33/trace.py SPACE docs.bench_search_issue18.reach_s33.probe_variants:LogDefault 1000 1008."""
import math
import numpy as np
from techniques.default import DefaultEnsemble
from techniques.bayes_opt import BayesOpt
from techniques.tpe import TPE


def _log_encoder(space):
    cols = []
    for p in space.params:
        vals = None
        if hasattr(p, "cardinality") and hasattr(p, "value_at"):
            try:
                vals = [p.value_at(i) for i in range(p.cardinality)]
            except Exception:
                vals = None
        if (vals and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in vals)
                and min(vals) > 0 and max(vals) / min(vals) >= 4):
            lo, hi = math.log(min(vals)), math.log(max(vals))
            cols.append((p.name, {v: (math.log(v) - lo) / (hi - lo) for v in vals}))
        else:
            cols.append((p.name, None))
    return cols


class LogGP(BayesOpt):
    def encode(self, config):
        if getattr(self, "_logcols", None) is None or self._logspace is not self.space:
            self._logcols, self._logspace = _log_encoder(self.space), self.space
        x = np.asarray(self.space.to_unit(config), dtype=float)
        out = x.copy()
        # each param is one dim for Enum/Integer
        for j, (n, m) in enumerate(self._logcols):
            if m is not None:
                out[j] = m[config[n]]
        return out


class LogDefault(DefaultEnsemble):
    def __init__(self, **kw):
        super().__init__(**kw)
        for i, arm in enumerate(self.arms):
            if type(arm) is BayesOpt:
                arm.__class__ = LogGP


class RandInitGP(BayesOpt):
    def _initial_design(self, n):
        idx = np.flatnonzero(self._avail)
        if len(idx) == 0 or n <= 0:
            return []
        n = min(n, len(idx))
        pick = self.rng.choice(len(idx), size=n, replace=False)
        return [self._pool_configs[int(idx[j])] for j in pick]


class RandInitDefault(DefaultEnsemble):
    def __init__(self, **kw):
        super().__init__(**kw)
        for arm in self.arms:
            if type(arm) is BayesOpt:
                arm.__class__ = RandInitGP
