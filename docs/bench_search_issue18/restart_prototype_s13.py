import math
import numpy as np
from techniques.bayes_opt import BayesOpt
from techniques.default import DefaultEnsemble


class RestartBO(BayesOpt):
    name = "BayesOpt-restart"

    def _rs_init(self):
        if not hasattr(self, "_rs"):
            self._rs = {"best": math.inf, "at": 0, "left": 0, "center": None, "ep_best": math.inf}

    def _ei_batch(self, k):
        self._rs_init()
        rs = self._rs
        n = len(self._obs)
        if self.best_value < rs["best"]:
            rs["best"], rs["at"] = self.best_value, n
        B = int(self.budget or 0)
        patience = max(10, B // 10)
        if B and n + len(self._pending) >= (1.0 - self.exploit_tail) * B:
            return super()._ei_batch(k)
        Xp = self._Xp
        if rs["left"] <= 0 and n - rs["at"] >= patience:
            inc = min((v, h) for h, (_, v) in self._obs.items())[1]
            x_inc = self.encode(self._obs[inc][0])
            vary = np.ptp(Xp, axis=0) > 1e-12
            far = (np.abs(Xp - x_inc)[:, vary] > 1e-9).sum(1) >= max(2, math.ceil(vary.sum() / 2))
            picks = self._masked(far, 1)
            if picks:
                rs["left"], rs["center"], rs["ep_best"], rs["at"] = patience // 2, picks[0], math.inf, n
            return picks + (super()._ei_batch(k - 1) if k > 1 else [])
        if rs["left"] > 0:
            # re-centre on the best measured point of the episode's region
            c = rs["center"]
            hc = self.hash(c)
            if hc in self._obs and self._obs[hc][1] < rs["ep_best"]:
                rs["ep_best"] = self._obs[hc][1]
            x_c = self.encode(c)
            vary = np.ptp(Xp, axis=0) > 1e-12
            near = (np.abs(Xp - x_c)[:, vary] > 1e-9).sum(1) <= 2
            picks = self._masked(near, k)
            rs["left"] -= len(picks)
            for p in picks:
                pass
            # the episode's centre follows the best measured configuration near it
            best_near = [(v, cfg) for h, (cfg, v) in self._obs.items()
                         if math.isfinite(v) and (np.abs(self.encode(cfg) - x_c)[vary] > 1e-9).sum() <= 2]
            if best_near:
                rs["center"] = min(best_near, key=lambda t: t[0])[1]
            return picks
        return super()._ei_batch(k)

    def _masked(self, mask, k):
        orig = self._avail.copy()
        if not (orig & mask).any():
            return super()._ei_batch(k)
        self._avail = orig & mask
        try:
            picks = super()._ei_batch(k)
        finally:
            taken = (orig & mask) & ~self._avail
            self._avail = orig & ~taken
        return picks


class DefRestart(DefaultEnsemble):
    name = "default-restart"

    def __init__(self, *, seed=None, **options):
        super().__init__(seed=seed, **options)
        for arm in self.arms:
            if isinstance(arm, BayesOpt):
                arm.__class__ = RestartBO
