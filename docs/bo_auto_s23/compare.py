"""Tables of the session-23 screen of spread_refits="auto" (run2/: one device call, 4x H200 host, CPUs only).

    python docs/bo_auto_s23/compare.py docs/bo_auto_s23/run2 > docs/bo_auto_s23/run2/tables.md
"""
import json
import statistics
import sys
from pathlib import Path

SPACES = ("convolution_A100", "convolution_A6000", "convolution_W7800", "dedispersion_A100", "pnpoly_RTX2080Ti")


def results(path: Path) -> dict:
    return json.loads(path.read_text())["spaces"][0]["results"]


def main(run: Path) -> None:
    print("## Rule 1: sequential and 8 simulated workers, retirement off, 3 seeds (per-seed scores)\n")
    print("| space | tuner | HEAD | auto | identical |\n|---|---|---|---|---|")
    for sp in SPACES:
        h, n = results(run / f"w18_head_{sp}.json"), results(run / f"w18_new_{sp}.json")
        for t in ("default", "default (8 workers)"):
            a, b = h[t]["per_seed_scores"], n[t]["per_seed_scores"]
            print(f"| {sp} | {t} | {a} | {b} | {'yes' if a == b else 'NO'} |")
    print("\n## Rule 3: 32 simulated workers, retirement on (mean score, s.e., failure share after the first 20 %)\n")
    print("| space | seeds | HEAD | auto | auto - HEAD (paired mean) |\n|---|---|---|---|---|")
    means = {"head": [], "new": []}
    for sp in SPACES:
        h, n = (results(run / f"w32_{v}_{sp}.json")["default (32 workers)"] for v in ("head", "new"))
        a, b = h["per_seed_scores"], n["per_seed_scores"]
        means["head"].append(h["score"])
        means["new"].append(n["score"])
        diff = statistics.mean(y - x for x, y in zip(a, b))
        print(f"| {sp} | {len(a)} | {h['score']:.3f} ± {h['sem']:.3f} | {n['score']:.3f} ± {n['sem']:.3f} | {diff:+.3f} |")
    mh, mn = statistics.mean(means["head"]), statistics.mean(means["new"])
    print(f"| mean of the five | | {mh:.3f} | {mn:.3f} | {mn - mh:+.3f} |")
    print("\n## Rule 2: bench_mpi, 32 ranks (last line of each log)\n")
    for v in ("head", "new"):
        print(f"{v}: " + (run / f"mpi32_{v}.log").read_text().strip().splitlines()[-1])
    print("\n## Stand-in, 32 workers, 1280 results (for information)\n")
    print("| seed | spread | mean ms | max ms | spread since | would retire after | fits |\n|---|---|---|---|---|---|---|")
    label = None
    for line in (run / "standin.jsonl").read_text().splitlines():
        if line.startswith("seed"):
            label = line.split()
            continue
        d = json.loads(line)
        print(f"| {label[1]} | {label[3]} | {d['compute_ms']['mean']} | {d['compute_ms']['max']} | {d.get('spread_since')} "
              f"| {d['would_retire_after']} | {d['fits']} |")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
