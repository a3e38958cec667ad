"""Session 29 reading (issue 18): which late picks a Platt-calibrated forest would have refused (offline replay).

    PYTHONPATH=. python docs/bench_search_issue18/calib_s29/offline_platt.py convolution_A100 1000
"""
import sys
import numpy as np
from docs.bench_search_issue18.calib_s29.replay_run import load, run
from techniques.feasibility import FeasibilityModel

def logit(p):
    p = np.clip(p, 0.02, 0.98); return np.log(p / (1 - p))

class Cal(FeasibilityModel):
    def _sklearn(self, X):
        from sklearn.ensemble import RandomForestClassifier
        from sklearn.linear_model import LogisticRegression
        m = self._checkpoint()
        if self._fitted_at != m:
            D, y = self._features(self._X[:m]), self._y[:m]
            self._platt = None
            if y.min() == y.max():
                self._clf = float(y[0])
            else:
                rf = RandomForestClassifier(n_estimators=self.trees, random_state=m, n_jobs=1, oob_score=True).fit(D, y)
                oob = rf.oob_decision_function_[:, list(rf.classes_).index(1.0)]
                ok = np.isfinite(oob)
                if ok.sum() >= 20 and len(set(y[ok])) == 2:
                    self._platt = LogisticRegression(C=1e4).fit(logit(oob[ok])[:, None], y[ok])
                self._clf = rf
            self._fitted_at = m
        if isinstance(self._clf, float):
            return np.full(len(X), self._clf)
        p = self._clf.predict_proba(self._features(X))[:, list(self._clf.classes_).index(1.0)]
        raw = p
        if self._platt is not None:
            p = self._platt.predict_proba(logit(p)[:, None])[:, 1]
        self._last_raw = raw
        return p

sp = sys.argv[1]; seed = int(sys.argv[2])
space = load(sp)
rows, ss, m = run(space, "grid", seed)
raw = FeasibilityModel.for_space(ss, kind="forest"); cal = Cal.for_space(ss, kind="forest")
out = []
for k, r in enumerate(rows):
    x = np.asarray(ss.to_unit(dict(r.config)), dtype=float)
    if k >= len(rows) // 5:
        out.append((float(raw.p_success(x[None])[0]), float(cal.p_success(x[None])[0]), str(r.state) == "OK", r.value))
    raw.add(x, str(r.state)); cal.add(x, str(r.state))
a = np.array([(o[0], o[1], o[2]) for o in out], dtype=float)
fail = a[:, 2] == 0
keep_raw = a[:, 0] >= 0.5; keep_cal = a[:, 1] >= 0.5
print(sp, seed, "late", len(a), "failed", int(fail.sum()))
print(" picks with raw P>=0.5:", int(keep_raw.sum()), "failing", int((keep_raw & fail).sum()))
print(" of those, calibrated P<0.5:", int((keep_raw & ~keep_cal).sum()), "of which failing", int((keep_raw & ~keep_cal & fail).sum()))
ok_vals = [o[3] for o in out if o[2]]
best = min(ok_vals) if ok_vals else None
lost = [o[3] for o, kr, kc in zip(out, keep_raw, keep_cal) if o[2] and kr and not kc]
print(" OK picks the calibrated filter would drop:", len(lost), "best of them", min(lost) if lost else None, "run best late", best, "optimum", m.f_opt)
