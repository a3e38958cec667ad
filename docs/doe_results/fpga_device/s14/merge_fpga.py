"""Merge the FPGA-flow runs: committed v4 (this machine), device calls f1-f4 (session 14), and this machine's fill-ins."""
import gzip, json, math, sys

#: run from the repository root: python docs/doe_results/fpga_device/s14/merge_fpga.py [out.json]
D = 'docs/doe_results/'
import numpy as np
base = json.load(open(D + 'hls_crc32_balanced_runs_v4.json'))
sources = [('here-v4', r) for r in base['runs']]
for f in ['f1_runs.json', 'f2_runs.json', 'f3_runs.json', 'f4a_runs.json', 'f4b_runs.json']:
    sources += [('device-s14', r) for r in json.load(open(D + 'fpga_device/s14/' + f))['runs']]
import glob
for f in sorted(glob.glob(D + 'fpga_device/s14/here_r*.json')):
    sources += [('here-s14', r) for r in json.load(open(f))['runs']]
chosen, agree, differ = {}, 0, []
for src, r in sources:
    if r.get('best') is None or r.get('error'):
        continue
    k = (r['budget'], r['seed'], r['tuner'])
    if k in chosen:
        if abs(chosen[k][1]['best'] - r['best']) < 1e-12: agree += 1
        else: differ.append((k, chosen[k][0], chosen[k][1]['best'], src, r['best']))
        continue
    chosen[k] = (src, r)
cache = json.load(gzip.open(D + 'hls_crc32_balanced_cache.json.gz', 'rt'))['entries']
costs = [v['cost'] for v in cache.values() if v.get('cost') is not None]
low = min(costs)
print('cache', len(cache), 'lowest', low, 'reached by', sum(abs(c - low) < 1e-12 for c in costs))
print('overlaps agree', agree, 'differ', len(differ)); [print(' ', d) for d in differ]
tuners = ['DLMT', 'random search', 'default ensemble', 'cstuner-ensemble']
rows = []
for b in (25, 56, 125):
    seeds = sorted({s for (bb, s, t) in chosen if bb == b and all((b, s, tt) in chosen for tt in tuners)})
    cells = []
    for t in tuners:
        v = np.array([chosen[(b, s, t)][1]['best'] for s in seeds])
        hit = int(np.sum(np.abs(v - low) < 1e-12))
        cells.append(f"{v.mean():.4f} ± {v.std(ddof=1)/math.sqrt(len(v)):.4f}, {hit} of {len(v)}")
    src = {}
    for s in seeds:
        for t in tuners: src[chosen[(b, s, t)][0]] = src.get(chosen[(b, s, t)][0], 0) + 1
    rows.append(f"| {b} ({len(seeds)} seeds: {seeds[0]}-{seeds[-1]}{'' if len(seeds)==seeds[-1]-seeds[0]+1 else ', gaps'}) | " + " | ".join(cells) + " |")
    print(b, 'sources', src)
print("| budget (seeds) | " + " | ".join(tuners) + " |"); print("|---|---|---|---|---|"); print("\n".join(rows))
out = {'note': 'merged by session 14: here-v4 = docs/doe_results/hls_crc32_balanced_runs_v4.json (this machine), '
        'device-s14 = the GPU machine\'s 16 CPUs (four calls), here-s14 = this machine, fill-ins; where a run ran twice the first source listed is kept',
       'lowest_cost': low, 'runs': [dict(r, source=src) for (src, r) in chosen.values()],
       'overlaps_agree': agree, 'overlaps_differ': [list(map(str, d)) for d in differ]}
if len(sys.argv) > 1: json.dump(out, open(sys.argv[1], 'w'), indent=1)
