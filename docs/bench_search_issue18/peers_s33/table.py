"""Session 33's peer table: the default beside OpenTuner 0.8.8 and Kernel Tuner 1.5.0, per space and mode.

Reads the bench_search JSONs under docs/bench_search_issue18/peers_s33/ (call*/ from the GPU machine's CPUs,
local/ from the 2-core VM; one bench_search command per space and mode, seeds 1000-1024) and prints, per mode,
score +/- s.e. and the failure share (whole run / after the first 20 %) of the default, OpenTuner and every
Kernel Tuner strategy; the best Kernel Tuner strategy per space is marked.  When a space ran in both places the
later file wins (local/ after call*/).

    python docs/bench_search_issue18/peers_s33/table.py
"""
from __future__ import annotations

import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
ORDER = ("convolution_A100", "convolution_A6000", "convolution_W7800", "dedispersion_A100", "pnpoly_RTX2080Ti")


def main() -> None:
    found: dict[tuple[str, str], tuple[dict, str]] = {}
    for f in sorted(HERE.glob("call*/*.json")) + sorted(HERE.glob("local/*.json")):
        for s in json.loads(f.read_text())["spaces"]:
            found[(s["mode"], s["space"])] = (s, str(f.relative_to(HERE)))
    for mode in ("file", "grid"):
        print(f"\n{mode} mode (score ± s.e.; failures whole run / after the first 20 %)\n")
        print("| space (budget) | default | OpenTuner 0.8.8 | Kernel Tuner: genetic_algorithm | pso | dual_annealing | "
              "from |")
        print("|---|---|---|---|---|---|---|")
        for sp in ORDER:
            if (mode, sp) not in found:
                print(f"| {sp} | not run | | | | | |")
                continue
            s, src = found[(mode, sp)]
            res = s["results"]

            def cell(prefix: str) -> tuple[str, float]:
                for label, r in res.items():
                    if label.startswith(prefix):
                        extra = label[len(prefix):].strip()
                        txt = (f"{r['score']:.3f} ± {r['sem']:.3f} ({r['failure_fraction']:.2f} / "
                               f"{r['failure_fraction_after_20pct']:.2f})")
                        return (txt + (f" {extra}" if extra else "")), r["score"]
                return "not run", float("-inf")

            cells = [cell("default"), cell("OpenTuner 0.8.8"), cell("Kernel Tuner 1.5 genetic_algorithm"),
                     cell("Kernel Tuner 1.5 pso"), cell("Kernel Tuner 1.5 dual_annealing")]
            best = max(range(2, 5), key=lambda i: cells[i][1])
            texts = [c[0] for c in cells]
            texts[best] = f"*{texts[best]}*"
            top = max(range(5), key=lambda i: cells[i][1])
            texts[top] = f"**{texts[top]}**"
            print(f"| {sp} ({s['budget']}) | " + " | ".join(texts) + f" | {src} |")


if __name__ == "__main__":
    main()
