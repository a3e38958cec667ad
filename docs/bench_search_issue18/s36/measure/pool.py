"""The default of record's file-mode scores pooled over every unread seed set it ran on (rule.md beside this file).

    python docs/bench_search_issue18/s36/measure/pool.py

Per space: the mean of the per-seed scores over all seeds and its standard error; the five-space mean and its
standard error sqrt(sum of the spaces' variances of the mean) / 5 (the spaces are scored independently).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
#: (file, key of the default of record in it, seeds)
SETS = [
    (ROOT / "bench_search_issue18/div_s35/screen/screen_file.json", "default_screened", "9100-9124"),
    (ROOT / "bench_search_issue18/div_s35/confirm_w1_w8.json", "default", "9200-9224"),
    (HERE / "measure_file.json", "default", "9300-9324"),
    (HERE / "file_9325.json", "default", "9325-9349"),
]


def _summary(per_space: dict[str, list[float]]) -> tuple[float, float]:
    means, var = [], 0.0
    for scores in per_space.values():
        n = len(scores)
        m = sum(scores) / n
        means.append(m)
        var += sum((x - m) ** 2 for x in scores) / (n - 1) / n
    return sum(means) / len(means), math.sqrt(var) / len(means)


def main() -> None:
    pooled: dict[str, list[float]] = {}
    for path, key, seeds in SETS:
        if not path.exists():
            print(f"{seeds}: {path.name} missing")
            continue
        data = json.loads(path.read_text())
        per_space = {s["space"]: s["results"][key]["per_seed_scores"] for s in data["spaces"]}
        m, se = _summary(per_space)
        cells = ", ".join(f"{k.split('_')[0][:4]} {k.split('_')[1]} {sum(v) / len(v):.3f}" for k, v in per_space.items())
        print(f"seeds {seeds}: mean {m:.3f} ± {se:.3f}  ({cells})")
        for k, v in per_space.items():
            pooled.setdefault(k, []).extend(v)
    m, se = _summary(pooled)
    n = len(next(iter(pooled.values())))
    print(f"pooled over {n} seeds: mean {m:.3f} ± {se:.3f}; per space " +
          ", ".join(f"{k} {sum(v) / len(v):.3f}" for k, v in pooled.items()))


if __name__ == "__main__":
    main()
