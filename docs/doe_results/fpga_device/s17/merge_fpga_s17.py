"""Add FPGA-flow runs to a merged runs file and print the table of record.

Run from the repository root, with the merged file to start from, the new runs files (``bench_doe hls
--json-out``) and where to write the result:
    python docs/doe_results/fpga_device/s17/merge_fpga_s17.py docs/doe_results/hls_crc32_balanced_runs_v5_merged.json \
        here-s17=docs/doe_results/fpga_device/s17/here_s17_125.json --out docs/doe_results/hls_crc32_balanced_runs_v6_merged.json
(session 17's command). A later session adds its file as one more SOURCE=PATH argument instead of copying this
script. Where a run is in several, the first record is kept (and the agreement counted).
"""
import argparse
import gzip
import json
import math
from pathlib import Path

import numpy as np

D = 'docs/doe_results/'
ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
ap.add_argument('base', help='a merged runs file (its records keep their "source")')
ap.add_argument('new', nargs='*', metavar='SOURCE=PATH', help='runs files to add, each with its source label')
ap.add_argument('--out', default=None, help='write the merged runs here')
args = ap.parse_args()
base = json.loads(Path(args.base).read_text())
sources = [(r.get('source', 'base'), r) for r in base['runs']]
for item in args.new:
    label, sep, path = item.partition('=')
    if not sep:
        ap.error(f'{item!r}: give SOURCE=PATH, e.g. here-s17=docs/doe_results/fpga_device/s17/here_s17_125.json')
    sources += [(label, r) for r in json.loads(Path(path).read_text())['runs']]
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
with gzip.open(D + 'hls_crc32_balanced_cache.json.gz', 'rt') as f:
    cache = json.load(f)['entries']
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
out = {'note': f'merged from {args.base} plus {", ".join(args.new) or "nothing"} '
               '(docs/doe_results/fpga_device/s17/merge_fpga_s17.py); where a run is in several, the first is kept. '
               'here-s17 = this machine, session 17, budget 125, seeds 14-20 (21 partial)',
       'lowest_cost': low, 'runs': [dict(r, source=src) for (src, r) in chosen.values()],
       'overlaps_agree': agree, 'overlaps_differ': [list(map(str, d)) for d in differ]}
if args.out:
    Path(args.out).write_text(json.dumps(out, indent=1))
