"""Session 37's rule (rule.md beside this file), condition by condition, from the runs' JSON.

    python docs/bench_search_issue18/s37/conditions.py

Paired differences are candidate minus default per seed; a mean's standard error over spaces is
sqrt(sum of the spaces' variances of the mean) / 5, as in s36/measure/pool.py.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

HERE = Path(__file__).resolve().parent
A, B = "default", "default_init10"
FILE = [HERE / "device/s37_file.json", HERE / "local/s37a_file.json"]  # seeds 9400-9424, 9425-9449
GRID_FILESCALE = [HERE / "device/s37_grid_filescale.json"]
GRID = [HERE / "device/s37_grid_small.json", HERE / "device/s37_grid_a6000.json", HERE / "local/s37b_grid_big.json"]


def _load(paths: list[Path]) -> dict[str, dict[str, dict]]:
    """space -> tuner -> {'per_seed': [...], 'late': [failure share after the first fifth, per file]}."""
    out: dict[str, dict[str, dict]] = {}
    for path in paths:
        for s in json.loads(path.read_text())["spaces"]:
            for tuner in (A, B):
                r = s["results"][tuner]
                cell = out.setdefault(s["space"], {}).setdefault(tuner, {"per_seed": [], "late": []})
                cell["per_seed"].extend(r["per_seed_scores"])
                cell["late"].append(r["failure_fraction_after_20pct"])
    return out


def _mean_se(xs: list[float]) -> tuple[float, float]:
    n = len(xs)
    m = sum(xs) / n
    return m, math.sqrt(sum((x - m) ** 2 for x in xs) / (n - 1) / n)


def _report(title: str, data: dict[str, dict[str, dict]]) -> tuple[float, float, dict[str, float]]:
    print(f"\n{title}")
    diffs, means_a, means_b, var = {}, [], [], 0.0
    for space, cells in data.items():
        a, b = cells[A]["per_seed"], cells[B]["per_seed"]
        d, se = _mean_se([y - x for x, y in zip(a, b)])
        ma, mb = sum(a) / len(a), sum(b) / len(b)
        means_a.append(ma)
        means_b.append(mb)
        var += se ** 2
        diffs[space] = d
        print(f"  {space:20s} n={len(a):3d} default {ma:.3f} candidate {mb:.3f} paired {d:+.3f} ± {se:.3f}"
              f"  late failures default {max(cells[A]['late']):.3f} candidate {max(cells[B]['late']):.3f}")
    k = len(means_a)
    print(f"  mean of {k}: default {sum(means_a) / k:.3f} candidate {sum(means_b) / k:.3f} "
          f"paired {sum(diffs.values()) / k:+.4f} ± {math.sqrt(var) / k:.4f}")
    return sum(means_a) / k, sum(means_b) / k, diffs


def main() -> None:
    fa, fb, fd = _report("file mode, seeds 9400-9449", _load(FILE))
    file_b = _load(FILE)
    pn = [v for k, v in file_b.items() if k.startswith("pnpoly")][0][B]["per_seed"]
    print(f"(a) paired mean > 0: {fb - fa:+.4f} -> {fb > fa}; no space lower by more than 0.05: "
          f"{min(fd.values()):+.3f} -> {min(fd.values()) >= -0.05}")
    print(f"(b) candidate's pnpoly >= 0.62: {sum(pn) / len(pn):.3f} -> {sum(pn) / len(pn) >= 0.62}")
    ga, gb, _ = _report("grid on the file scale, seeds 9400-9424", _load(GRID_FILESCALE))
    print(f"(c) not lower by more than 0.02: {gb - ga:+.4f} -> {gb - ga >= -0.02}")
    grid = _load(GRID)
    ra, rb, _ = _report("grid on its own scale, seeds 9400-9424", grid)
    late = max(max(c[B]["late"]) for c in grid.values())
    print(f"(d) not lower by more than 0.02: {rb - ra:+.4f} -> {rb - ra >= -0.02}; candidate's late failures at "
          f"most 0.10 on every space: {late:.3f} -> {late <= 0.10}")


if __name__ == "__main__":
    main()
