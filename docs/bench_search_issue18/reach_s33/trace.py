"""Session 33 reading (file mode, development seeds; no decision rests on it): per seed, when a run first came
within 10 %, 3 %, 1 % of the optimum and the score axis's loss per fifth, for one technique on one space.

    python docs/bench_search_issue18/reach_s33/trace.py convolution_A6000 default 1000 1008
    python docs/bench_search_issue18/reach_s33/trace.py convolution_A6000 docs.bench_search_issue18.reach_s33.probe_variants:RandInitDefault 1000 1016

Run from the repository root. The runs' values go to /tmp/<space>_<technique>_<first seed>.json.
"""
import sys, json, numpy as np
sys.path.insert(0, '.')
from scripts.bench_search import load_space, Methodology, run_technique
from concurrent.futures import ProcessPoolExecutor
sp = sys.argv[1]; tech = sys.argv[2]; seeds = range(int(sys.argv[3]), int(sys.argv[4]))
space = load_space(f'../shared/data/spaces/{sp}.json.gz')
meth = Methodology(space.scalars('file'))
def one(s):
    return list(run_technique(tech, space, 'file', meth.budget, s))
with ProcessPoolExecutor(1) as ex:
    runs = list(ex.map(one, seeds))
tr = np.array([meth.trace(r) for r in runs])
sc = meth.scores(tr)
B = meth.budget; k0 = meth.k0
print(sp, tech, 'budget', B, 'k0', k0, 'score', sc.mean().round(3))
for s, t, v in zip(seeds, tr, sc):
    rel = t / meth.f_opt
    hit = [int(np.argmax(rel <= th)) + 1 if (rel <= th).any() else None for th in (1.10, 1.03, 1.01, 1.0000001)]
    # loss by fifth of axis
    r = meth.baseline[k0-1:]; ss = t[k0-1:]
    P = (ss - r) / (meth.f_opt - r)
    segs = np.array_split(1 - P, 5)
    print(s, round(float(v), 3), 'first<=1.10,1.03,1.01,opt:', hit, 'loss by fifth', [round(float(x.mean()), 2) for x in segs])
json.dump([list(map(float, r)) for r in runs], open(f'/tmp/{sp}_{tech.replace(":","_")}_{seeds.start}.json', 'w'))
