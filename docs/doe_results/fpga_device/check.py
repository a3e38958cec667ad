"""Device check: the carried tools run, and re-measured cached configurations give the cached costs."""
import gzip, json, os, sys, time, multiprocessing as mp
sys.path.insert(0, os.getcwd())
from apps.hls_flags.evaluator import HlsEvaluator
from apps.hls_flags.flow import score_flow

def one(c):
    ev = HlsEvaluator("crc32", timeout=120)
    res = ev.flow(c["config"])
    out = None if res.failure else score_flow(res, BASE, "balanced").metrics["cost"]
    ev.close()
    return c["cost"], out, res.seconds

ev = HlsEvaluator("crc32", timeout=120)
t = time.time(); BASE = ev.baseline(); print("baseline", BASE.metrics, f"{BASE.seconds:.2f} s")
cache = json.load(gzip.open("docs/doe_results/hls_crc32_balanced_cache.json.gz", "rt"))["entries"]
sample = [v for v in list(cache.values())[:: max(1, len(cache) // 32)] if v["cost"] is not None][:32]
t = time.time()
with mp.get_context("fork").Pool(16) as pool:
    rows = pool.map(one, sample)
print(f"32 flows on 16 workers: {time.time() - t:.1f} s wall; flow seconds median "
      f"{sorted(r[2] for r in rows)[len(rows)//2]:.2f}, max {max(r[2] for r in rows):.2f}")
print("cached vs re-measured equal:", sum(abs(a - b) < 1e-9 for a, b, _ in rows if b is not None), "of", len(rows),
      [(round(a, 4), b and round(b, 4)) for a, b, _ in rows if b is None or abs(a - b) >= 1e-9])
