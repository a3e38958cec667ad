"""Stage B of session 37's rule (rule.md beside this file): the adopted default on seeds 9500-9599, pooled.

    python docs/bench_search_issue18/s37/pool.py

Per space the mean of the per-seed scores and its standard error; the five-space mean with standard error
sqrt(sum of the spaces' variances of the mean) / 5, as s36/measure/pool.py (whose summary this reuses).
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("s36_pool", HERE.parent / "s36/measure/pool.py")
assert _spec is not None and _spec.loader is not None
_s36 = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(_s36)
SETS = [(HERE / f"stageB/s37B_{s}_file.json", f"{s}-{s + 24}") for s in (9500, 9525, 9550, 9575)]


def main() -> None:
    pooled: dict[str, list[float]] = {}
    for path, seeds in SETS:
        if not path.exists():
            print(f"{seeds}: {path.name} missing")
            continue
        per_space = {s["space"]: s["results"]["default"]["per_seed_scores"]
                     for s in json.loads(path.read_text())["spaces"]}
        m, se = _s36._summary(per_space)
        print(f"seeds {seeds}: mean {m:.3f} ± {se:.3f}  (" +
              ", ".join(f"{k} {sum(v) / len(v):.3f}" for k, v in per_space.items()) + ")")
        for k, v in per_space.items():
            pooled.setdefault(k, []).extend(v)
    m, se = _s36._summary(pooled)
    n = len(next(iter(pooled.values())))
    print(f"pooled over {n} seeds: mean {m:.3f} ± {se:.3f} (mean - 1 s.e. = {m - se:.3f}); per space " +
          ", ".join(f"{k} {sum(v) / len(v):.3f}" for k, v in pooled.items()))


if __name__ == "__main__":
    main()
