"""Join run.sh's results (Rand, +RF, default, AUCBandit) with run_oracle.sh's (hybrid, dims: vec/local/image).

The global loading of each heuristic is run.sh's "+RF" run (the PoCL model predicted global on every kernel).
Only kernels whose oracle pass finished (every heuristic x loading, no deadline cut) are written.
Run from the repository root:  python docs/garvey_results/pocl_s14/merge_oracle.py
"""
import json
from pathlib import Path

D = Path("docs/garvey_results/pocl_s14")
main = json.loads((D / "pocl_table3.json").read_text())
orc = {r["benchmark"]: r for r in json.loads((D / "pocl_oracle.json").read_text())}
out = []
for r in main:
    o = orc.get(r["benchmark"])
    keys = [f"{h}:{ld}" for h in ("hybrid", "dims") for ld in ("vec", "local", "image")]
    if not o or o.get("incomplete") or any(k not in o["strategies"] or o["strategies"][k].get("deadline") for k in keys):
        continue
    s = dict(r["strategies"])
    for h in ("hybrid", "dims"):
        assert s[f"{h}+RF"]["loading"] == "global"
        s[f"{h}:global"] = s[f"{h}+RF"]
    s.update({k: o["strategies"][k] for k in keys})
    out.append({**r, "strategies": s})
(D / "pocl_table3_oracle.json").write_text(json.dumps(out, indent=1))
print(f"{len(out)} kernels with oracle runs: {', '.join(r['benchmark'] for r in out)}")
