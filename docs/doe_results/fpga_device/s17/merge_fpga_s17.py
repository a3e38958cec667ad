"""Add session 17's budget-125 runs (seeds 14-24, this machine) to the session-14 merge and print the table.

Run from the repository root:
    python docs/doe_results/fpga_device/s17/merge_fpga_s17.py docs/doe_results/hls_crc32_balanced_runs_v6_merged.json
Where a run is in both, the v5 record is kept (and the agreement counted).
"""
import gzip
import json
import math
import sys

import numpy as np

D = 'docs/doe_results/'
v5 = json.load(open(D + 'hls_crc32_balanced_runs_v5_merged.json'))
sources = [(r.get('source', 'v5'), r) for r in v5['runs']]
sources += [('here-s17', r) for r in json.load(open(D + 'fpga_device/s17/here_s17_125.json'))['runs']]
chosen, agree, differ = {}, 0, []
for src, r in sources:
    if r.get('best') is None or r.get('error'):
        continue
    k = (r['budget'], r['seed'], r['tuner'])
    if k in chosen:
        if abs(chosen[k][1]['best'] - r['best']) < 1e-12:
            agree += 1
        else:
            differ.append((k, chosen[k][0], chosen[k][1]['best'], src, r['best']))
        continue
    chosen[k] = (src, r)
cache = json.load(gzip.open(D + 'hls_crc32_balanced_cache.json.gz', 'rt'))['entries']
costs = [v['cost'] for v in cache.values() if v.get('cost') is not None]
low = min(costs)
print('cache', len(cache), 'lowest', low, 'reached by', sum(abs(c - low) < 1e-12 for c in costs))
print('overlaps agree', agree, 'differ', len(differ))
for d in differ:
    print(' ', d)
tuners = ['DLMT', 'random search', 'default ensemble', 'cstuner-ensemble']
rows = []
for b in (25, 56, 125):
    seeds = sorted({s for (bb, s, t) in chosen if bb == b and all((b, s, tt) in chosen for tt in tuners)})
    cells = []
    for t in tuners:
        v = np.array([chosen[(b, s, t)][1]['best'] for s in seeds])
        hit = int(np.sum(np.abs(v - low) < 1e-12))
        cells.append(f"{v.mean():.4f} ± {v.std(ddof=1) / math.sqrt(len(v)):.4f}, {hit} of {len(v)}")
    dl = np.array([chosen[(b, s, 'DLMT')][1]['best'] for s in seeds])
    for t in tuners[1:]:
        o = np.array([chosen[(b, s, t)][1]['best'] for s in seeds])
        print(b, 'DLMT at or below', t, 'in', int(np.sum(dl <= o + 1e-12)), 'of', len(seeds))
    src = {}
    for s in seeds:
        for t in tuners:
            src[chosen[(b, s, t)][0]] = src.get(chosen[(b, s, t)][0], 0) + 1
    gaps = '' if len(seeds) == seeds[-1] - seeds[0] + 1 else ', gaps'
    rows.append(f"| {b} ({len(seeds)} seeds: {seeds[0]}-{seeds[-1]}{gaps}) | " + " | ".join(cells) + " |")
    print(b, 'sources', src)
print("| budget (seeds) | " + " | ".join(tuners) + " |")
print("|---|---|---|---|---|")
print("\n".join(rows))
out = {'note': 'merged by session 17: the session-14 merge (v5, sources as recorded there) plus here-s17 = this '
               'machine, budget 125, seeds 14-24 (docs/doe_results/fpga_device/s17/here_s17_125.json); where a run '
               'is in both, the v5 record is kept',
       'lowest_cost': low, 'runs': [dict(r, source=src) for (src, r) in chosen.values()],
       'overlaps_agree': agree, 'overlaps_differ': [list(map(str, d)) for d in differ]}
if len(sys.argv) > 1:
    json.dump(out, open(sys.argv[1], 'w'), indent=1)
