"""Launch generated CUDA stencil kernels for Nsight Compute to profile (GPU machine).

Why: the benchmark explains a kernel's shortfall from the roofline with
ptxas's registers and spills; Nsight Compute adds what the hardware did
(achieved occupancy, DRAM and L2 throughput, stall reasons).  This script only
builds kernels of given configurations and runs them (verified against the
NumPy reference, as in the benchmark), so that ``ncu`` wrapping it sees
exactly those kernels.

One configuration:

    ncu --csv -k regex:stencil -c 1 --section SpeedOfLight --section Occupancy \\
        python3 -m scripts.stencil_ncu --stencil hypterm --config tuned.json

``--config`` is ``baseline``, a JSON object, or a results file of
``scripts.bench_stencil_gpu`` (its ``tuned_config`` for the stencil is used).
A configuration with kernel fission (``fis`` > 1) launches ``fis`` kernels
(``stencil_kernel_0`` ...) per step: give ncu a ``--launch-count`` of at least
``fis`` to see all of them.

A plan (issue 17's Nsight Compute reading): ``--plan PLAN.json`` lists items
``{"label", "stencil", "from": results file, "seed": n, "set": {...}}`` (the
recorded ``tuned_config`` of search ``seed`` in that file, with ``set``
applied on top) or ``{"label", "stencil", "config": {...}}`` (over the
baseline).  For each item of the stencils chosen with ``--only``, in one
process: compile (in parallel), measure and verify with ``--repeats``
launches, then launch each of its kernels once between
``cuProfilerStart``/``cuProfilerStop``, so that ``ncu --profile-from-start off``
profiles exactly one launch per kernel, in plan order.  One JSON line per item
goes to stdout and to ``--out``/items.jsonl (state, time, % of the roofline
against the copy bandwidth measured in the same process, ptxas registers,
spills and shared memory per kernel, and ``ncu_first``: the index of its
first profiled kernel in ncu's report); ptxas's log per item goes to
``--out``/ptxas_LABEL.txt.  ``scripts/gpu_ncu.sh --plan PLAN.json`` runs
this under ncu, one process per stencil.

``--dry-run`` (no GPU; nvcc is enough): checks every item's configuration
against the space's rules, generates and compiles it for ``--arch`` and
prints the ptxas numbers, so that a device call does not fail on a typo.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from scripts.bench_stencil_gpu import _app, _measure


def load_config(text: str, stencil: str) -> dict[str, Any]:
    """The configuration named by ``--config`` (see the module docstring)."""
    from apps.stencil.cuda_gen import cuda_baseline

    if text == "baseline":
        return cuda_baseline()
    if os.path.exists(text):
        with open(text) as fh:
            data = json.load(fh)
        rows = data.get("cuda", []) if isinstance(data, dict) else []
        for row in rows:
            if row.get("stencil") == stencil and isinstance(row.get("tuned_config"), dict):
                return row["tuned_config"]
        raise SystemExit(f"--config {text}: no tuned_config for stencil {stencil!r} in that results file")
    try:
        config = json.loads(text)
    except json.JSONDecodeError as exc:
        raise SystemExit(f"--config: not 'baseline', a file, or a JSON object ({exc})") from exc
    if not isinstance(config, dict):
        raise SystemExit("--config: the JSON must be an object of parameter values")
    return config


# ---- plans ---------------------------------------------------------------------------------------
def plan_items(path: str, only: list[str] | None = None) -> list[dict[str, Any]]:
    """The plan's items (``only``: these stencils), each with its full ``config`` resolved.

    ``from`` paths are relative to the repository root (the working directory)
    or to the plan's folder.
    """
    from apps.stencil.cuda_gen import cuda_baseline

    with open(path) as fh:
        plan = json.load(fh)
    items = plan["items"] if isinstance(plan, dict) else plan
    out = []
    labels: set[str] = set()
    for it in items:
        if only and it["stencil"] not in only:
            continue
        label = it["label"]
        if not re.fullmatch(r"[A-Za-z0-9_.-]+", label) or label in labels:
            raise SystemExit(f"plan {path}: label {label!r} must be unique, of letters, digits, '.', '_', '-'")
        labels.add(label)
        config = cuda_baseline()
        if "from" in it:
            src = it["from"]
            if not os.path.exists(src):
                src = os.path.join(os.path.dirname(path), it["from"])
            with open(src) as fh:
                rows = json.load(fh).get("cuda", [])
            match = [r for r in rows if r.get("stencil") == it["stencil"] and r.get("seed") == it["seed"]]
            if len(match) != 1:
                raise SystemExit(f"plan {path}: {label}: {len(match)} rows of {it['stencil']} seed {it['seed']} "
                                 f"in {it['from']}")
            config.update(match[0]["tuned_config"])
            recorded = match[0].get("tuned_roof_frac")
        else:
            recorded = None
        config.update(it.get("config", {}))
        config.update(it.get("set", {}))
        out.append({"label": label, "stencil": it["stencil"], "config": config, "why": it.get("why", ""),
                    "recorded_pct_roofline": None if recorded is None or it.get("set") else 100.0 * recorded})
    return out


def _ptxas_per_kernel(log: str) -> list[dict[str, Any]]:
    """ptxas's numbers per kernel, in the order of the log (``-Xptxas -v``)."""
    out: list[dict[str, Any]] = []
    cur: dict[str, Any] | None = None
    for ln in log.splitlines():
        m = re.search(r"Compiling entry function '(\w+)'", ln)
        if m:
            cur = {"kernel": m.group(1), "registers": None, "spill_stores": 0, "spill_loads": 0, "smem": 0}
            out.append(cur)
            continue
        if cur is None:
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", ln)
        if m:
            cur["spill_stores"], cur["spill_loads"] = int(m.group(1)), int(m.group(2))
        m = re.search(r"Used (\d+) registers", ln)
        if m:
            cur["registers"] = int(m.group(1))
        m = re.search(r"(\d+) bytes smem", ln)
        if m:
            cur["smem"] = int(m.group(1))
    return out


def _write(out: str | None, name: str, text: str) -> None:
    if out:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, name), "a" if name.endswith(".jsonl") else "w") as fh:
            fh.write(text)


def dry_run(items: list[dict[str, Any]], arch: str, out: str | None, jobs: int) -> int:
    """Rules, generation and nvcc for every item, no GPU; returns the number of failures."""
    from apps.stencil.cstuner import cstuner_stencil
    from apps.stencil.cuda_gen import cuda_why_illegal, generate_cuda
    from ensemble.errors import EnsembleError
    from measurement.cuda import compile_cuda

    stencils = {n: cstuner_stencil(n, None) for n in {it["stencil"] for it in items}}

    def one(it: dict[str, Any]) -> dict[str, Any]:
        st = stencils[it["stencil"]]
        why = cuda_why_illegal(st, it["config"])
        rec: dict[str, Any] = {"label": it["label"], "stencil": it["stencil"]}
        if why:
            return {**rec, "state": "ILLEGAL", "reason": why}
        k = generate_cuda(st, it["config"])
        t0 = time.perf_counter()
        try:
            b = compile_cuda(k.source, arch=arch, options=k.options, timeout=300)
        except EnsembleError as exc:  # nvcc failed or is missing: report it, go on with the others
            return {**rec, "state": "FAILED", "reason": str(exc)[:300]}
        _write(out, f"ptxas_{it['label']}.txt", b.log)
        return {**rec, "state": "COMPILED", "kernels": len(k.kernels), "grid": k.grid, "block": k.block,
                "compile_s": round(time.perf_counter() - t0, 1), "ptxas": _ptxas_per_kernel(b.log)}

    bad = 0
    with ThreadPoolExecutor(max(1, jobs)) as ex:
        for rec in ex.map(one, items):
            bad += rec["state"] != "COMPILED"
            print(json.dumps(rec), flush=True)
    return bad


def run_plan(items: list[dict[str, Any]], repeats: int, out: str | None, jobs: int, size: int | None) -> int:
    """Measure, verify and profile-launch every item (GPU); returns the number not OK."""
    import gc

    import numpy as np
    import pycuda.driver as drv

    from measurement.cuda import CudaBackend

    be = CudaBackend(0)
    bw = be.copy_bandwidth(1 << 31)
    print(f"device {be.name}: copy {bw / 1e9:.0f} GB/s (same process)", flush=True)
    profiled = 0
    bad = 0
    for name in dict.fromkeys(it["stencil"] for it in items):
        t0 = time.perf_counter()
        app = _app(stencil=name, backend="cuda", size=size)
        app.device_backend = be
        runner = app.runner()
        st = app.stencil
        roof = st.compulsory_bytes() / bw  # every stencil here is memory-bound (STENCILS.md)
        mine = [it for it in items if it["stencil"] == name]
        print(f"{name}: data, reference and upload in {time.perf_counter() - t0:.1f} s", flush=True)
        with ThreadPoolExecutor(max(1, jobs)) as ex:
            builds = list(ex.map(runner.build, [it["config"] for it in mine]))
        for it, built in zip(mine, builds):
            rec: dict[str, Any] = {"label": it["label"], "stencil": name, "device": be.name,
                                   "copy_bandwidth_gbs": bw / 1e9, "roofline_ms": roof * 1e3,
                                   "recorded_pct_roofline": it["recorded_pct_roofline"], "why": it["why"]}
            if isinstance(built, tuple):  # (kernel spec, cubin): measure and verify the build made above
                saved = dict(runner.timing)
                runner.timing.update(repeats=repeats, warmup=2)
                try:
                    r = runner.measure(built)
                finally:
                    runner.timing = saved
                res = {"state": r.state, "reason": r.reason, "time": r.time, **r.metrics}
                log = built[1].log
            else:
                res, log = {"state": built.state, "reason": built.reason}, ""
            rec.update({k: res.get(k) for k in ("state", "reason", "time", "max_abs_error", "registers",
                                                "spill_stores", "smem_bytes", "compile_time")})
            rec["pct_roofline"] = 100.0 * roof / res["time"] if res.get("state") == "OK" and res.get("time") else None
            rec["ptxas"] = _ptxas_per_kernel(log)
            _write(out, f"ptxas_{it['label']}.txt", log)
            if res.get("state") == "OK":
                k, build = built
                consts = {n: np.asarray(v, st.dtype) for n, v in k.constants.items()}
                rec["kernels"] = list(k.kernels)
                rec["ncu_first"] = profiled
                # the dynamic shared memory (dsmem, zq) exactly as the runner passes it: without it a zq
                # kernel reads past its zero-byte allocation (illegal address, seen on the H100)
                extra = {"shared": list(k.shared)} if k.shared else {}
                drv.start_profiler()
                try:
                    r1 = be.run(build, k.kernels, grid=k.grid, block=k.block,
                                args=[runner.bufs[a] for a in k.args], constants=consts,
                                warmup=0, repeats=1, **extra)
                finally:
                    drv.stop_profiler()
                profiled += len(k.kernels)
                rec["profiled_launch_state"] = r1.state
            else:
                bad += 1
            rec["config"] = it["config"]
            line = json.dumps(rec, default=str)
            print(line, flush=True)
            _write(out, "items.jsonl", line + "\n")
        del app, runner, builds
        gc.collect()  # frees this stencil's device arrays before the next one uploads
    return bad


# ---- reading ncu's raw page ----------------------------------------------------------------------
_SCALE = {"byte": 1, "kbyte": 1e3, "mbyte": 1e6, "gbyte": 1e9, "tbyte": 1e12, "nsecond": 1e-9, "usecond": 1e-6,
          "msecond": 1e-3, "second": 1.0, "ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}

#: (column in the summary, metric of ncu's raw page): sections SpeedOfLight, Occupancy, LaunchStats,
#: MemoryWorkloadAnalysis, SchedulerStats, WarpStateStats and the --metrics that gpu_ncu.sh adds;
#: "a|b": the first of these that the report holds (names differ between ncu versions)
SUMMARY_METRICS = (
    ("duration_s", "gpu__time_duration.sum"),
    ("registers", "launch__registers_per_thread"),
    ("smem_per_block", "launch__shared_mem_per_block_static"),
    ("theoretical_occupancy_pct", "sm__maximum_warps_per_active_cycle_pct"),
    ("achieved_occupancy_pct", "sm__warps_active.avg.pct_of_peak_sustained_active"),
    ("blocks_limit_registers", "launch__occupancy_limit_registers"),
    ("blocks_limit_smem", "launch__occupancy_limit_shared_mem"),
    ("blocks_limit_warps", "launch__occupancy_limit_warps"),
    ("dram_pct", "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed|dram__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("l2_pct", "lts__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("l1_pct", "l1tex__throughput.avg.pct_of_peak_sustained_active"),
    ("sm_pct", "sm__throughput.avg.pct_of_peak_sustained_elapsed"),
    ("dram_read_bytes", "dram__bytes_read.sum"),
    ("dram_write_bytes", "dram__bytes_write.sum"),
    ("l2_bytes", "lts__t_bytes.sum"),
    ("l1_bytes", "l1tex__t_bytes.sum"),
    ("l2_hit_pct", "lts__t_sector_hit_rate.pct"),
    ("l1_hit_pct", "l1tex__t_sector_hit_rate.pct"),
    ("issue_active_pct", "smsp__issue_active.avg.pct_of_peak_sustained_active"),
    ("eligible_warps", "smsp__warps_eligible.avg.per_cycle_active"),
    ("active_warps_per_scheduler", "smsp__warps_active.avg.per_cycle_active"),
    ("warp_cycles_per_issue", "smsp__average_warp_latency_per_inst_issued.ratio|smsp__average_warps_active_per_issue_active.ratio"),
    ("local_load_sectors", "l1tex__t_sectors_pipe_lsu_mem_local_op_ld.sum"),
    ("local_store_sectors", "l1tex__t_sectors_pipe_lsu_mem_local_op_st.sum"),
)
_STALL = re.compile(r"^smsp__average_warps_issue_stalled_(\w+?)_per_issue_active\.ratio$")


def read_raw_csv(text: str) -> list[dict[str, float | str]]:
    """Rows of ``ncu --import R --csv --page raw`` (units row applied: bytes and seconds in base units)."""
    import csv
    import io

    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    if len(lines) < 2:
        return []
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    head, units, data = rows[0], rows[1], rows[2:]
    if units and units[0] == "ID":  # no units row (should not happen)
        units, data = [""] * len(head), rows[1:]
    out = []
    for r in data:
        rec: dict[str, float | str] = {}
        for name, unit, v in zip(head, units, r):
            try:
                rec[name] = float(v.replace(",", "")) * _SCALE.get(unit.strip().lower(), 1.0)
            except ValueError:
                rec[name] = v
        out.append(rec)
    return out


def summarize(folder: str) -> str:
    """summary.csv and summary.md in ``folder`` from its items.jsonl and raw_<stencil>.csv files."""
    import csv

    items = []
    with open(os.path.join(folder, "items.jsonl")) as fh:
        items = [json.loads(ln) for ln in fh if ln.strip()]
    raw: dict[str, list[dict[str, Any]]] = {}
    for it in items:
        p = os.path.join(folder, f"raw_{it['stencil']}.csv")
        if it["stencil"] not in raw and os.path.exists(p):
            with open(p) as fh:
                raw[it["stencil"]] = read_raw_csv(fh.read())
    rows = []
    for it in items:
        kernels = it.get("kernels") or []
        prof = raw.get(it["stencil"], [])
        compulsory = it["roofline_ms"] * 1e-3 * it["copy_bandwidth_gbs"] * 1e9
        for j, kname in enumerate(kernels):
            idx = it["ncu_first"] + j
            m = next((r for r in prof if r.get("ID") == float(idx)), None)
            row: dict[str, Any] = {"label": it["label"], "stencil": it["stencil"], "kernel": kname,
                                   "pct_roofline": it.get("pct_roofline"),
                                   "recorded_pct_roofline": it.get("recorded_pct_roofline")}
            pt = (it.get("ptxas") or [{}] * len(kernels))
            pk = next((p for p in pt if p.get("kernel") == kname), pt[j] if j < len(pt) else {})
            row.update({"ptxas_registers": pk.get("registers"), "ptxas_spill_stores": pk.get("spill_stores"),
                        "ptxas_spill_loads": pk.get("spill_loads"), "ptxas_smem": pk.get("smem")})
            if m is None:
                row["note"] = "not in ncu's report"
                rows.append(row)
                continue
            if m.get("Kernel Name") not in (None, kname):
                row["note"] = f"ncu kernel {m.get('Kernel Name')!r} (order mismatch?)"
            for col, met in SUMMARY_METRICS:
                v = next((m[x] for x in met.split("|") if isinstance(m.get(x), float)), None)
                row[col] = v
            rd, wr = row.get("dram_read_bytes"), row.get("dram_write_bytes")
            row["dram_bytes_over_compulsory"] = (rd + wr) / compulsory if rd is not None and wr is not None else None
            stalls = sorted(((k2, v) for k2, v in m.items() if isinstance(v, float) and _STALL.match(k2)),
                            key=lambda kv: -kv[1])
            row["top_stalls"] = "; ".join(f"{_STALL.match(k2).group(1)} {v:.1f}" for k2, v in stalls[:4])  # type: ignore[union-attr]
            rows.append(row)
    cols: list[str] = []
    for r in rows:
        cols += [c for c in r if c not in cols]
    with open(os.path.join(folder, "summary.csv"), "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows(rows)

    def f(v: Any, p: int = 1) -> str:
        return "-" if v is None else (f"{v:.{p}f}" if isinstance(v, float) else str(v))
    md = [("| item | kernel | ms | % roof (same run) | regs / spill B | occ. theo / achieved % | DRAM % | L2 % | SM % "
           "| DRAM / compulsory | L2 hit % | eligible warps | top stalls (cycles per issue) |"),
          "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        ms = None if r.get("duration_s") is None else 1e3 * r["duration_s"]
        md.append(f"| {r['label']} | {r['kernel']} | {f(ms, 3)} | {f(r.get('pct_roofline'))} | {f(r.get('registers'), 0)} / "
                  f"{f(r.get('ptxas_spill_stores'), 0)} | {f(r.get('theoretical_occupancy_pct'))} / "
                  f"{f(r.get('achieved_occupancy_pct'))} | {f(r.get('dram_pct'))} | {f(r.get('l2_pct'))} | "
                  f"{f(r.get('sm_pct'))} | {f(r.get('dram_bytes_over_compulsory'), 2)} | {f(r.get('l2_hit_pct'))} | "
                  f"{f(r.get('eligible_warps'), 2)} | {r.get('top_stalls', r.get('note', ''))} |")
    md += ["", ("| item | kernels | ncu ms (sum) | % roof by ncu time | % roof by events (ncu process) | recorded % "
                "| DRAM / compulsory (sum) | max regs | spill B (ptxas, sum) |"), "|---|---|---|---|---|---|---|---|---|"]
    for it in items:
        mine = [r for r in rows if r["label"] == it["label"] and r.get("duration_s") is not None]
        if not mine:
            continue
        t = sum(r["duration_s"] for r in mine)
        traffic = [r.get("dram_bytes_over_compulsory") for r in mine]
        regs = [r.get("registers") for r in mine if r.get("registers") is not None]
        spills = sum(float(r.get("ptxas_spill_stores") or 0) for r in mine)
        md.append(f"| {it['label']} | {len(mine)} | {1e3 * t:.3f} | {100 * it['roofline_ms'] * 1e-3 / t:.1f} | "
                  f"{f(it.get('pct_roofline'))} | {f(it.get('recorded_pct_roofline'))} | "
                  f"{f(sum(traffic), 2) if None not in traffic else '-'} | {f(max(regs), 0) if regs else '-'} | "
                  f"{spills:.0f} |")
    text = "\n".join(md) + "\n"
    with open(os.path.join(folder, "summary.md"), "w") as fh:
        fh.write(text)
    return text


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--stencil")
    ap.add_argument("--config", default="baseline")
    ap.add_argument("--plan", help="a plan file (see the module docstring)")
    ap.add_argument("--only", default=None, help="with --plan: comma-separated stencils")
    ap.add_argument("--dry-run", action="store_true", help="with --plan: rules and nvcc only, no GPU")
    ap.add_argument("--arch", default="sm_90", help="with --dry-run")
    ap.add_argument("--jobs", type=int, default=8, help="parallel nvcc processes")
    ap.add_argument("--out", default=None, help="with --plan: folder for items.jsonl and the ptxas logs")
    ap.add_argument("--size", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--summarize", metavar="DIR", help="summary.csv/.md from DIR's items.jsonl and raw_*.csv")
    args = ap.parse_args(argv)
    if args.summarize:
        print(summarize(args.summarize), end="")
        return 0
    if args.plan:
        items = plan_items(args.plan, args.only.split(",") if args.only else None)
        if not items:
            raise SystemExit(f"--plan {args.plan}: no items for --only {args.only}")
        if args.dry_run:
            return 1 if dry_run(items, args.arch, args.out, args.jobs) else 0
        return 1 if run_plan(items, args.repeats, args.out, args.jobs, args.size) else 0
    if not args.stencil:
        ap.error("--stencil is required without --plan")
    app = _app(stencil=args.stencil, backend="cuda", size=args.size)
    config = {**load_config("baseline", args.stencil), **load_config(args.config, args.stencil)}
    res = _measure(app, config, args.repeats)
    print(json.dumps({"stencil": args.stencil, **{k: v for k, v in res.items() if k != "config"},
                      "config": config}, default=str))
    return 0 if res.get("state") == "OK" else 1


if __name__ == "__main__":
    raise SystemExit(main())
