import sys, numpy as np, functools
import techniques.bayes_opt as bm
from scripts import bench_search as bs
mode_spread = sys.argv[1]
orig_init = bm.BayesOpt.__init__
def init(self, *a, **k):
    orig_init(self, *a, **k)
    self.spread_refits = mode_spread == "on"
bm.BayesOpt.__init__ = init
if len(sys.argv) > 2 and sys.argv[2] == "restart1":
    import techniques.gaussian_process as gp
    of = bm.fit_hyperparameters_steps
    def f(X, y, rng, *, start=None, restarts=1, maxiter=50, chunk=10):
        return of(X, y, rng, start=start, restarts=1 if len(X) <= 256 else 0, maxiter=maxiter, chunk=chunk)
    bm.fit_hyperparameters_steps = f
path = "/work/shared/data/spaces/convolution_A6000.json.gz"
space = bs.load_space(path)
mode = "file"
meth = bs.Methodology(space.scalars(mode), cutoff=0.95, cutoff_start=0.01)
scores = []
for seed in range(1000, 1000 + int(sys.argv[3] if len(sys.argv) > 3 else 4)):
    vals = bs.run_technique_workers("default", space, mode, meth.budget, seed, 8)
    sc = meth.scores(np.array([meth.trace(vals)]))
    scores.append(round(float(sc.mean()), 3))
print(sys.argv[1:], scores, round(float(np.mean(scores)), 3), flush=True)
