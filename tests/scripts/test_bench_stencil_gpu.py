"""scripts/bench_stencil_gpu.py end to end without a GPU: a stand-in backend, the real tuner and records."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import numpy as np
import pytest

from ensemble.result import Result
from measurement.cuda import CudaBuild


class _FakeCuda:
    """Times a kernel by a made-up model (fewer registers and fission are faster); verifies nothing."""

    name = "stand-in GPU"
    arch = "sm_90"

    def peaks(self) -> dict[str, float]:
        return {"sms": 1, "clock_hz": 1e9, "fp64_peak": 3e13, "fp32_peak": 6e13}

    def copy_bandwidth(self, nbytes: int = 0) -> float:
        return 3e12

    def upload(self, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
        return {k: np.array(v) for k, v in arrays.items()}

    def empty(self, nbytes: int) -> Any:
        return np.zeros(nbytes, np.uint8)

    def zero(self, buf: Any, nbytes: int) -> None:
        buf[...] = 0

    def download(self, buf: Any, out: np.ndarray) -> np.ndarray:
        return out

    @contextlib.contextmanager
    def active(self):  # type: ignore[no-untyped-def]
        yield

    def run(self, build: CudaBuild, kernels: Any, **kw: Any) -> Result:
        t = 1e-5 * (1 + build.registers / 64) / (1 + 0.1 * len(kernels))
        return Result(state="OK", time=t, metrics=build.metrics())


def test_searches_make_one_record_per_stencil_and_a_plot(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    import measurement.cuda as mc
    from scripts import bench_stencil_gpu as bench

    def fake_compile(source: str, **kw: Any) -> CudaBuild:
        regs = 40 + (len(source) // 97) % 200
        return CudaBuild(b"\x7fELF", "sm_90", regs, 0, 0, 0, "", 0.0)

    monkeypatch.setattr(mc, "compile_cuda", fake_compile)
    args = ["--part", "cuda", "--stencils", "j3d7pt,addsgd4", "--size", "32", "--budget", "8", "--searches", "2",
            "--repeats", "2", "--parallelism", "2", "--out", str(tmp_path)]
    monkeypatch.setattr(bench, "_save", lambda a, r: None)
    report: dict[str, Any] = {"_cuda_backend": _FakeCuda()}
    ns = _parse(bench, args)
    bench.part_cuda(ns, report)
    recs = json.loads((tmp_path / "cuda_roofline.json").read_text())
    assert [r["stencil"] for r in recs] == ["j3d7pt", "addsgd4"]
    for r in recs:
        for k in ("stencil", "searches", "median_pct_roofline", "worst_pct_roofline", "best_pct_roofline",
                  "baseline_pct_roofline", "device", "copy_bandwidth_gbs"):
            assert k in r
        assert len(r["searches"]) == 2 and [s["seed"] for s in r["searches"]] == [1, 2]
        assert r["worst_pct_roofline"] <= r["median_pct_roofline"] <= r["best_pct_roofline"]
        assert r["copy_bandwidth_gbs"] == pytest.approx(3000.0)
    pytest.importorskip("matplotlib")
    png = bench.plot_records(str(tmp_path / "cuda_roofline.json"))
    assert png.endswith(".png")


def _parse(bench: Any, argv: list[str]) -> Any:
    """The benchmark's own argument parser (main() without running the parts)."""
    captured: dict[str, Any] = {}

    def grab(a: Any, r: Any) -> None:
        captured["args"] = a

    saved = bench.part_cuda
    bench.part_cuda = grab
    try:
        bench.main(argv)
    finally:
        bench.part_cuda = saved
    return captured["args"]
