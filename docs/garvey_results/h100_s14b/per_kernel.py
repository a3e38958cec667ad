"""Per-kernel numbers of the session-14b H100 call (run from the repository root, after `bench_garvey table`).

    python docs/garvey_results/h100_s14b/per_kernel.py > docs/garvey_results/h100_s14b/per_kernel.md

"best known": the lowest time any strategy measured on that kernel (at 32^3 it includes the exhaustive sweep,
which the deadline stopped after 35,875 of the 42,777 configurations); "% over best": how much slower a
strategy's best is than that.  Times in us (one measurement each: the mean of three launches).
"""
import json
from pathlib import Path

D = Path(__file__).parent
LD = ("global", "vec", "local", "image")
print("| kernel | grid | Rand (1000) us | ExpS us (configs) | Oracle hybrid us (loading, configs) | "
      "hybrid + RF us (loading) | best known us (from) | Rand / ExpS / Oracle hybrid / hybrid + RF: % over best | "
      "ExpS / Oracle hybrid / hybrid + RF speedup over Rand |")
print("|---|---|---|---|---|---|---|---|---|")
for f in ("a_64", "b_32"):
    res = json.loads((D / f"{f}.json").read_text())
    tab = json.loads((D / f"{f}_table.json").read_text())
    rf = {n: ld for n, ld in zip(tab["names"], next(r for r in tab["rows"] if r["approach"] == "hybrid + RF")["loadings"])}
    for r in res:
        s = r["strategies"]
        us = {k: v["best"] * 1e6 for k, v in s.items()}
        hy = min(LD, key=lambda ld: us[f"hybrid:{ld}"])
        hy_cfg = sum(s[f"hybrid:{ld}"]["configs"] for ld in LD)
        p = rf[r["benchmark"]]
        src = min(us, key=us.get)
        best = us[src]
        ex = s.get("Exhaustive")
        exs = f" ({ex['configs']:,} configs{', cut by the deadline' if ex['deadline'] else ''})" if ex and src == "Exhaustive" else ""
        pct = " / ".join(f"{100 * (x / best - 1):.0f}" for x in (us["Rand"], us["ExpS"], us[f"hybrid:{hy}"], us[f"hybrid:{p}"]))
        sp = " / ".join(f"{us['Rand'] / x:.2f}" for x in (us["ExpS"], us[f"hybrid:{hy}"], us[f"hybrid:{p}"]))
        print(f"| {r['benchmark']} | {r['size']}^3 | {us['Rand']:.2f} | {us['ExpS']:.2f} ({s['ExpS']['configs']}) | "
              f"{us[f'hybrid:{hy}']:.2f} ({hy}, {hy_cfg}) | {us[f'hybrid:{p}']:.2f} ({p}) | {best:.2f} ({src}{exs}) | {pct} | {sp} |")
