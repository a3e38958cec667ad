"""Evaluate the work-group predictors as Cummins et al. do (ADAPT 2016, Section 7).

    python -m scripts.cummins_eval --data docs/cummins_results/pocl docs/cummins_results/nvidia \
        --out docs/cummins_results

Partitions (Section 7): 10-fold cross-validation over scenarios (``cv10``),
training on synthetic kernels and testing on the real-world ones
(``synthetic``), leave one device out (``device``; ``device-unguarded``
without the small-device guard), leave one kernel out (``kernel``, the kernel
without its element type).
For every test scenario and every predictor (5 classifiers x 3 fallbacks,
the runtime regressor, the speedup regressor) we record:

* performance: p(s, w) = t(s, Omega(s)) / t(s, w), the fraction of the oracle;
* speedup over the best fixed size: t(s, w_fixed) / t(s, w), where w_fixed
  is the baseline of Algorithm 1 computed on *all* scenarios (the best
  size legal everywhere, the role of the paper's w(4x4));
* whether the model's first answer was the oracle (accuracy), over W_max
  (invalid), refused, or a size the sweep did not measure on that scenario
  (off-grid: the grid differs between devices), before fallbacks;
* the prediction time.

A size counts as legal for a test scenario when the sweep measured it there
(Eq. 1 with the measured data standing in for launching it).  Writes
``eval_rows.csv`` (one row per scenario, predictor, partition),
``eval_summary.csv``/``.md`` and, with matplotlib, ``eval_speedup.png``.
"""

from __future__ import annotations

import argparse
import csv
import math
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from apps.workgroup.data import WorkgroupData, load, merge
from techniques.workgroup import WorkgroupPredictor
from techniques.workgroup.models import CLASSIFIERS
from techniques.workgroup.sizes import baseline, oracle, performance, within_max

PAPER = {"median speedup over best fixed size": "3.79x", "fraction of oracle": "94%",
         "baseline fraction of oracle": "24%"}


def partitions(d: WorkgroupData, which: list[str], seed: int) -> list[tuple[str, str, list[int], list[int]]]:
    """(partition kind, fold label, train indices, test indices)."""
    n = len(d)
    out: list[tuple[str, str, list[int], list[int]]] = []
    if "cv10" in which:
        order = np.random.default_rng(seed).permutation(n)
        folds = np.array_split(order, min(10, n))
        for k, fold in enumerate(folds):
            ts = {int(i) for i in fold}
            out.append(("cv10", f"fold{k}", [i for i in range(n) if i not in ts], sorted(ts)))
    if "synthetic" in which:   # Section 7's second partition: train on synthetic kernels, test on real-world ones
        syn = [i for i, s in enumerate(d.scenarios) if s["family"].startswith("synthetic")]
        real = [i for i, s in enumerate(d.scenarios) if not s["family"].startswith("synthetic")]
        if syn and real:
            out.append(("synthetic -> real-world", "all", syn, real))
    for kind, key in (("device", "device"), ("device-unguarded", "device"), ("kernel", "kernel")):
        if kind not in which:
            continue
        groups: dict[str, list[int]] = defaultdict(list)
        for i, s in enumerate(d.scenarios):
            groups[s[key].rsplit(".", 1)[0] if kind == "kernel" else s[key]].append(i)
        name = "leave-one-device-out, no W_max guard" if kind == "device-unguarded" else f"leave-one-{kind}-out"
        if len(groups) < 2:
            continue
        for g, test in sorted(groups.items()):
            ts = set(test)
            out.append((name, g, [i for i in range(n) if i not in ts], sorted(ts)))
    return out


def predictors(seed: int, quick: bool) -> list[tuple[str, WorkgroupPredictor, list[str]]]:
    """(name, unfitted predictor, fallbacks to apply) per model."""
    out = []
    for name in CLASSIFIERS:
        out.append((name, WorkgroupPredictor("classifier", model=name, seed=seed), ["baseline", "random", "nearest"]))
    out.append(("runtime", WorkgroupPredictor("runtime", seed=seed), ["-"]))
    out.append(("speedup", WorkgroupPredictor("speedup", seed=seed), ["-"]))
    if quick:
        out = [o for o in out if o[0] in ("J48", "speedup")]
    return out


def first_kind(w: tuple[int, int], d: WorkgroupData, i: int) -> str:
    if not within_max(w, d.scenarios[i]["w_max"]):
        return "invalid"
    if w in d.refused[i]:
        return "refused"
    if w not in d.times[i]:
        return "offgrid"
    return "legal"


def evaluate(d: WorkgroupData, which: list[str], seed: int, quick: bool) -> list[dict[str, Any]]:
    fixed = baseline(d.times)
    rows: list[dict[str, Any]] = []
    for kind, label, train, test in partitions(d, which, seed):
        tr = d.subset(train)
        for name, pred, fallbacks in predictors(seed, quick):
            pred.guard_small_device = "no W_max guard" not in kind
            t0 = time.perf_counter()
            try:
                pred.fit(tr.features, tr.times, tr.refused, tr.column("w_max"))
            except Exception as exc:  # noqa: BLE001 - e.g. W_safe empty in a fold: report, do not stop the table
                print(f"{kind}/{label} {name}: cannot train ({exc})", file=sys.stderr)
                continue
            fit_s = time.perf_counter() - t0
            for fb in fallbacks:
                if fb != "-":
                    pred.fallback = fb
                for i in test:
                    t = d.times[i]
                    p = pred.predict(d.features[i], d.scenarios[i]["w_max"], t.__contains__,
                                     pool=sorted(set(t) | d.refused[i]))
                    w = p.size
                    first = p.first or w
                    rows.append({
                        "partition": kind, "fold": label, "model": name, "fallback": fb,
                        "scenario": d.scenarios[i]["scenario"], "device": d.scenarios[i]["device"],
                        "wr": w[0], "wc": w[1], "oracle": "x".join(map(str, oracle(t))),
                        "performance": performance(t, w),
                        "speedup": (t[fixed] / t[w]) if (fixed in t and w in t) else math.nan,
                        "accurate": int(first == oracle(t)), "first": first_kind(first, d, i),
                        "tries": p.tries, "predict_s": p.seconds, "fit_s": fit_s, "w_safe_note": int(p.used_w_safe)})
            print(f"{kind}/{label} {name}: fit {fit_s:.1f} s", flush=True)
    return rows


def _read_rows(path: Path) -> list[dict[str, Any]]:
    """eval_rows.csv back into rows with numbers where the evaluation wrote numbers."""
    with open(path, newline="") as fh:
        rows: list[dict[str, Any]] = list(csv.DictReader(fh))
    for r in rows:
        for k in ("performance", "speedup", "predict_s", "fit_s"):
            r[k] = float(r[k])
        for k in ("accurate", "tries", "w_safe_note", "wr", "wc"):
            r[k] = int(r[k])
    return rows


def _gmean(xs: list[float]) -> float:
    xs = [x for x in xs if x > 0 and math.isfinite(x)]
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else math.nan


def summarize(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = defaultdict(list)
    for r in rows:
        groups[(r["partition"], r["model"], r["fallback"])].append(r)
    out = []
    for (part, model, fb), rs in sorted(groups.items()):
        sp = [r["speedup"] for r in rs if math.isfinite(r["speedup"])]
        out.append({"partition": part, "model": model, "fallback": fb, "n": len(rs),
                    "median_speedup": float(np.median(sp)) if sp else math.nan,
                    "gmean_speedup": _gmean(sp),
                    "mean_performance": float(np.mean([r["performance"] for r in rs])),
                    "accuracy": float(np.mean([r["accurate"] for r in rs])),
                    "refused": float(np.mean([r["first"] == "refused" for r in rs])),
                    "invalid": float(np.mean([r["first"] == "invalid" for r in rs])),
                    "offgrid": float(np.mean([r["first"] == "offgrid" for r in rs])),
                    "w_safe": float(np.mean([int(r["w_safe_note"]) for r in rs])),
                    "predict_ms": 1e3 * float(np.mean([r["predict_s"] for r in rs]))})
    return out


def write(out: Path, d: WorkgroupData, rows: list[dict[str, Any]], summary: list[dict[str, Any]],
          command: str) -> None:
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "eval_rows.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    with open(out / "eval_summary.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(summary[0]))
        w.writeheader()
        w.writerows(summary)
    fixed = baseline(d.times)
    base_perf = float(np.mean([performance(t, fixed) for t in d.times]))
    devices = sorted({s["device"] for s in d.scenarios})
    log = out / "eval_commands.txt"   # every evaluation that wrote rows, in order (--append adds one)
    if command and "--summarize-only" not in command:
        with open(log, "a") as fh:
            fh.write(command + "\n")
    cmds = log.read_text().splitlines() if log.exists() else [command]
    lines = ["Commands (the rows of each are in eval_rows.csv):", "", *[f"    {c}" for c in cmds], "",
             (f"{len(d)} scenarios on {len(devices)} device(s) ({', '.join(devices)}); "
              f"best fixed size (Algorithm 1 baseline over all scenarios) {fixed[0]}x{fixed[1]}, "
              f"which reaches {base_perf:.0%} of the oracle on average "
              f"(paper: {PAPER['baseline fraction of oracle']})."),
             "", ("| partition | model | fallback | n | median speedup | gmean speedup | % of oracle | accuracy | "
                  "refused | invalid | off-grid | W_safe | predict ms |"), "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for s in summary:
        lines.append(f"| {s['partition']} | {s['model']} | {s['fallback']} | {s['n']} | {s['median_speedup']:.2f}x | "
                     f"{s['gmean_speedup']:.2f}x | {s['mean_performance']:.1%} | {s['accuracy']:.1%} | "
                     f"{s['refused']:.1%} | {s['invalid']:.1%} | {s['offgrid']:.1%} | {s['w_safe']:.1%} | "
                     f"{s['predict_ms']:.2f} |")
    folds = summarize([dict(r, partition=f"{r['partition']}: {r['fold']}") for r in rows
                       if r["partition"].startswith("leave-one-device-out")])
    if folds:
        lines += ["", ("Leave-one-device-out by held-out device (% of oracle; W_safe = answered with the W_safe "
                       "baseline because the held-out device's W_max is below every training device's):"), "",
                  ("| partition | held out | model | fallback | median speedup | % of oracle | invalid | off-grid | "
                   "W_safe |"), "|---|---|---|---|---|---|---|---|---|"]
        for s in folds:
            part, held = s["partition"].split(": ", 1)
            lines.append(f"| {part} | {held} | {s['model']} | {s['fallback']} | "
                         f"{s['median_speedup']:.2f}x | {s['mean_performance']:.1%} | {s['invalid']:.1%} | "
                         f"{s['offgrid']:.1%} | {s['w_safe']:.1%} |")
    lines += ["", "Paper (429 scenarios, 7 devices): median 3.79x over the best fixed size, 94% of the oracle."]
    (out / "eval_summary.md").write_text("\n".join(lines) + "\n")
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    parts = sorted({s["partition"] for s in summary})
    fig, axes = plt.subplots(len(parts), 1, figsize=(10, 3.2 * len(parts)), squeeze=False)
    for ax, part in zip(axes[:, 0], parts):
        ss = [s for s in summary if s["partition"] == part]
        labels = [s["model"] + ("" if s["fallback"] == "-" else "/" + s["fallback"][:4]) for s in ss]
        ax.bar(range(len(ss)), [s["mean_performance"] for s in ss], color="tab:blue")
        ax.axhline(base_perf, color="gray", ls="--", label="best fixed size")
        ax.set_xticks(range(len(ss)), labels, rotation=60, ha="right", fontsize=7)
        ax.set_ylim(0, 1)
        ax.set_ylabel("fraction of oracle")
        ax.set_title(part)
        ax.legend(loc="lower right", fontsize=7)
    fig.tight_layout()
    fig.savefig(out / "eval_performance.png", dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", nargs="*", help="extract folders (default: the shipped extract)")
    ap.add_argument("--out", default="docs/cummins_results")
    ap.add_argument("--partitions", nargs="*", default=["cv10", "device", "kernel"])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--quick", action="store_true", help="J48 and the speedup regressor only")
    ap.add_argument("--append", action="store_true", help="add these partitions' rows to OUT/eval_rows.csv")
    ap.add_argument("--summarize-only", action="store_true",
                    help="re-read OUT/eval_rows.csv and rewrite the summary (no training)")
    a = ap.parse_args(argv)
    d = merge(*[load(p) for p in a.data]) if a.data else load()
    if a.summarize_only:
        rows = _read_rows(Path(a.out) / "eval_rows.csv")
    else:
        rows = evaluate(d, a.partitions, a.seed, a.quick)
        if a.append:
            rows = _read_rows(Path(a.out) / "eval_rows.csv") + rows
    summary = summarize(rows)
    write(Path(a.out), d, rows, summary, "python -m scripts.cummins_eval " + " ".join(argv or sys.argv[1:]))
    print((Path(a.out) / "eval_summary.md").read_text())
    return 0


if __name__ == "__main__":
    sys.exit(main())
