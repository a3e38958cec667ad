"""Print a bench_search JSON as the rule's table: per space, score / late-failure share of every technique.

    python docs/bench_search_issue18/products_s32/summ.py FILE.json [OLD_LABEL NEW_LABEL]

Late failures: the share of the evaluations after the first 20 % of the budget that failed
(``failure_fraction_after_20pct``).  With two labels it also counts the spaces where NEW's share is lower.
"""

from __future__ import annotations

import json
import statistics
import sys


def main() -> None:
    d = json.load(open(sys.argv[1]))
    labels = [k for k in d["spaces"][0]["results"] if not k.startswith("random")]
    print("| space | " + " | ".join(f"{x}: score / late failures" for x in labels) + " |")
    print("|---|" + "---|" * len(labels))
    means: dict[str, list[float]] = {x: [] for x in labels}
    for s in d["spaces"]:
        r = s["results"]
        cells = []
        for x in labels:
            means[x].append(r[x]["score"])
            cells.append(f"{r[x]['score']:.3f} / {r[x]['failure_fraction_after_20pct']:.3f}")
        print(f"| {s['space']} | " + " | ".join(cells) + " |")
    print("| mean | " + " | ".join(f"{statistics.mean(means[x]):.4f}" for x in labels) + " |")
    if len(sys.argv) > 3:
        old, new = sys.argv[2], sys.argv[3]
        rows = [(s["space"], s["results"][old]["failure_fraction_after_20pct"],
                 s["results"][new]["failure_fraction_after_20pct"]) for s in d["spaces"]]
        lower = sum(n < o for _, o, n in rows)
        worst = max(n - o for _, o, n in rows)
        print(f"late failures lower on {lower} of {len(rows)}; largest rise {worst:+.3f}; "
              f"mean {statistics.mean(means[new]) - statistics.mean(means[old]):+.4f}")


if __name__ == "__main__":
    main()
