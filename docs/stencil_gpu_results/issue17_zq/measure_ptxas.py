"""ptxas (sm_90) registers and spills of z-streamed sb=8 kernels at 320^3, zq on/off (docs/STENCILS.md, zq).

Usage, from the repository root: PYTHONPATH=. python docs/stencil_gpu_results/issue17_zq/measure_ptxas.py OUT.json
[STENCIL]; nvcc only, no GPU.  For a fissioned configuration: the largest kernel's
registers and the spill bytes summed over its kernels (measurement.cuda.parse_ptxas).
"""
import json
import sys
from concurrent.futures import ThreadPoolExecutor
from apps.stencil.cstuner import cstuner_stencil
from apps.stencil.cuda_gen import cuda_baseline, cuda_why_illegal, generate_cuda
from measurement.cuda import compile_cuda

def rows():
    for name, fis_list in (("hypterm", [1]), ("addsgd6", [1, 3]), ("rhs4center", [1])):
        for fis in fis_list:
            for bx, by in ((32, 4), (32, 8), (16, 8)):
                for zq in (False, True):
                    for rr in (0, 128, 168):
                        yield name, {**cuda_baseline(), "sd": "z", "sb": 8, "bx": bx, "by": by, "fis": fis,
                                     "zq": zq, "maxrreg": rr}

def one(args):
    name, c = args
    st = cstuner_stencil(name, 320)
    why = cuda_why_illegal(st, c)
    if why:
        return name, c, None, why, ()
    k = generate_cuda(st, c)
    bd = compile_cuda(k.source, arch="sm_90", options=k.options)
    return name, c, {"registers": bd.registers, "spill_stores": bd.spill_stores, "spill_loads": bd.spill_loads,
                     "smem": bd.smem_bytes, "log": bd.log}, None, k.shared

if __name__ == "__main__":
    todo = list(rows())
    if len(sys.argv) > 2:
        todo = [r for r in todo if r[0] == sys.argv[2]]
    with ThreadPoolExecutor(2) as pool:
        out = []
        for name, c, bd, why, shared in pool.map(one, todo):
            rec = {"stencil": name, "bx": c["bx"], "by": c["by"], "fis": c["fis"], "zq": c["zq"],
                   "maxrreg": c["maxrreg"], "why": why, "shared": list(shared), **(bd or {})}
            out.append(rec)
            print({k: v for k, v in rec.items() if k != "log"}, flush=True)
    json.dump(out, open(sys.argv[1], "w"), indent=1)
