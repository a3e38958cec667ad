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
    # --opt-in: session 27's searches with it silently fell back to random sampling (seeds without l2pf, which
    # the space refused); the ensemble must run, and the picks carry the opt-in parameter
    args = ["--part", "cuda", "--stencils", "j3d7pt,addsgd4", "--size", "32", "--budget", "8", "--searches", "2",
            "--repeats", "2", "--parallelism", "2", "--opt-in", "l2pf", "--out", str(tmp_path)]
    monkeypatch.setattr(bench, "_save", lambda a, r: None)
    report: dict[str, Any] = {"_cuda_backend": _FakeCuda()}
    ns = _parse(bench, args)
    bench.part_cuda(ns, report)
    assert all(r["search"].startswith("ensemble.tune(technique='default'") for r in report["cuda"])
    assert all("l2pf" in r["tuned_config"] for r in report["cuda"])
    for r in report["cuda"]:  # what the budget went to: every unique trial counted once, by its final state
        assert r["trial_states"].get("OK", 0) >= 1 and sum(r["trial_states"].values()) == 8, r["trial_states"]
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


def test_require_narrows_every_search_and_drops_the_seeds_outside(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``--require EXPR``: a paired run's arm without one parameter of the space (session 28: l2pf == 0)."""
    import measurement.cuda as mc
    from scripts import bench_stencil_gpu as bench

    monkeypatch.setattr(mc, "compile_cuda", lambda source, **kw: CudaBuild(
        b"\x7fELF", "sm_90", 40 + (len(source) // 97) % 200, 0, 0, 0, "", 0.0))
    monkeypatch.setattr(bench, "_save", lambda a, r: None)
    seen: list[dict[str, Any]] = []
    real_tune = bench._tune

    def spy(app: Any, seeds: list[dict[str, Any]], *a: Any, **kw: Any) -> Any:
        seen.extend(seeds)
        return real_tune(app, seeds, *a, **kw)

    monkeypatch.setattr(bench, "_tune", spy)
    args = ["--part", "cuda", "--stencils", "addsgd4", "--size", "32", "--budget", "10", "--searches", "1",
            "--repeats", "2", "--parallelism", "2", "--more-seeds", "--opt-in", "l2pf", "--require", "l2pf == 0",
            "--require", "sd == 'z'", "--out", str(tmp_path)]
    report: dict[str, Any] = {"_cuda_backend": _FakeCuda()}
    bench.part_cuda(_parse(bench, args), report)
    assert seen and all(c["l2pf"] == 0 and c["sd"] == "z" for c in seen)  # the baseline (sd='none') is dropped
    (r,) = report["cuda"]
    assert r["search"].startswith("ensemble.tune(technique='default'") and r["require"] == ["l2pf == 0", "sd == 'z'"]
    assert r["tuned_config"].get("l2pf", 0) == 0 and r["tuned_config"].get("sd") == "z"


def test_require_names_a_bad_expression(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from scripts import bench_stencil_gpu as bench

    report: dict[str, Any] = {"_cuda_backend": _FakeCuda()}
    with pytest.raises(SystemExit, match=r"--require 'l2pff == 0'.*l2pff"):
        bench.part_cuda(_parse(bench, ["--part", "cuda", "--stencils", "j3d7pt", "--size", "32",
                                       "--require", "l2pff == 0", "--out", str(tmp_path)]), report)


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


class _DriftingCuda(_FakeCuda):
    """After the first copy the whole device runs 10 % slower: copies and kernels alike (clocks, a neighbour)."""

    def __init__(self) -> None:
        self.copies = 0

    def _scale(self) -> float:
        return 1.1 if self.copies > 1 else 1.0

    def copy_bandwidth(self, nbytes: int = 0) -> float:
        self.copies += 1
        return 3e12 / self._scale()

    def run(self, build: CudaBuild, kernels: Any, **kw: Any) -> Result:
        res = super().run(build, kernels, **kw)
        return Result(state="OK", time=float(res.time or 0.0) * self._scale(), metrics=res.metrics)


def _confirm_run(tmp_path: Any, monkeypatch: Any, be: Any) -> dict[str, Any]:
    """One j3d7pt search of 8 evaluations with --confirm 3 --confirm-rounds 3 on ``be``; its record."""
    import measurement.cuda as mc
    from scripts import bench_stencil_gpu as bench

    def fake_compile(source: str, **kw: Any) -> CudaBuild:
        return CudaBuild(b"\x7fELF", "sm_90", 40 + (len(source) // 97) % 200, 0, 0, 0, "", 0.0)

    monkeypatch.setattr(mc, "compile_cuda", fake_compile)
    monkeypatch.setattr(bench, "_save", lambda a, r: None)
    ns = _parse(bench, ["--part", "cuda", "--stencils", "j3d7pt", "--size", "32", "--budget", "8", "--searches", "1",
                        "--repeats", "2", "--parallelism", "2", "--confirm", "3", "--confirm-rounds", "3",
                        "--out", str(tmp_path)])
    bench.part_cuda(ns, {"_cuda_backend": be})
    return dict(json.loads((tmp_path / "cuda_roofline.json").read_text())[0])


def test_confirm_pairs_each_timing_with_a_fresh_copy_and_keeps_the_first_copy_figure(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """--confirm: the top candidates re-timed against the copy of their round; a device-wide slowdown after the
    first copy leaves the paired figure where it was and lowers the one against the first copy by the slowdown."""
    be = _DriftingCuda()
    rec = _confirm_run(tmp_path, monkeypatch, be)
    s = rec["searches"][0]
    conf = s["confirm"]
    assert conf["rounds"] == 3 and 1 <= len(conf["candidates"]) <= 3
    meds = [c["median_pct_roofline"] for c in conf["candidates"]]
    assert max(meds) == pytest.approx(s["pct_roofline"])          # the pick is the best paired median, re-timed
    assert s["pct_roofline_vs_first_copy"] == pytest.approx(s["pct_roofline"] / 1.1, rel=1e-6)
    assert rec["median_pct_roofline"] == pytest.approx(s["pct_roofline"])
    assert be.copies == 1 + 2 * 3                                  # the first copy, then one per round
    assert s["tuned_ms"] == pytest.approx(1e3 * conf["time"])      # the time of the same rounds as the figure


class _SlowAfterCopyCuda(_FakeCuda):
    """The first measurement after each copy runs 13 % slow, the later ones do not (seen on the H100, j3d7pt)."""

    def __init__(self) -> None:
        self.fresh = False

    def copy_bandwidth(self, nbytes: int = 0) -> float:
        self.fresh = True
        return 3e12

    def run(self, build: CudaBuild, kernels: Any, **kw: Any) -> Result:
        res = super().run(build, kernels, **kw)
        slow, self.fresh = (1.13 if self.fresh else 1.0), False
        return Result(state="OK", time=float(res.time or 0.0) * slow, metrics=res.metrics)


def test_confirm_settles_after_each_copy_so_no_candidate_pays_for_coming_first(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """The figure reported comes from measurements not right after a copy: the pick's fresh rounds equal its
    median in the candidate rounds (before the settle measurement they came out 13 % slow)."""
    s = _confirm_run(tmp_path, monkeypatch, _SlowAfterCopyCuda())["searches"][0]
    conf = s["confirm"]
    assert len(conf["candidates"]) >= 2
    meds = sorted(c["median_pct_roofline"] for c in conf["candidates"])
    assert s["pct_roofline"] == pytest.approx(meds[-1])  # the pick's fresh rounds agree with its candidate rounds


def test_confirm_settings_out_of_range_name_the_option(capsys) -> None:  # type: ignore[no-untyped-def]
    from scripts import bench_stencil_gpu as bench

    for bad in (["--confirm", "-1"], ["--confirm-rounds", "0"]):
        with pytest.raises(SystemExit):
            bench.main(["--part", "cuda", *bad])
        assert "--confirm-rounds >= 1" in capsys.readouterr().err


def test_top_configs_are_the_fastest_distinct_ok_results(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ensemble.space import Integer, SearchSpace
    from ensemble.tune import tune
    from scripts.bench_stencil_gpu import _top_configs

    space = SearchSpace().add(Integer("x", 0, 9))
    db = f"sqlite:///{tmp_path}/t.db"
    tune(lambda c: float((c["x"] - 4) ** 2) if c["x"] != 5 else float("inf"), space, test_limit=10, database=db,
         run_name="r", technique="Random", seed=1, quiet=True)
    top = _top_configs(db, "r", 3)
    assert top[0]["x"] == 4 and len(top) == 3 and len({c["x"] for c in top}) == 3
    assert _top_configs(db, "nope", 3) == []


def test_the_merging_seed_is_added_only_when_asked_for() -> None:
    """The seed list: the baseline first; merge=True (--merge-seed) adds one legal seed with 2 x 2 points per thread."""
    from apps.stencil.cstuner import cstuner_stencil
    from apps.stencil.cuda_gen import cuda_baseline, cuda_is_legal
    from scripts.bench_stencil_gpu import _cuda_seeds

    merged = {**cuda_baseline(), "bmy": 2, "bmz": 2}
    for name in ("j3d7pt", "hypterm"):
        st = cstuner_stencil(name, 64)
        with_seed, without = _cuda_seeds(st, merge=True), _cuda_seeds(st)
        assert with_seed[0] == without[0] == cuda_baseline()
        assert merged in with_seed and merged not in without
        assert [c for c in with_seed if c != merged] == without
        assert all(cuda_is_legal(st, c) for c in with_seed)


def test_a_search_the_space_refuses_stops_the_benchmark_instead_of_sampling(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from ensemble.errors import ConfigurationError
    from scripts import bench_stencil_gpu as bench

    app = bench._app(stencil="j3d7pt", backend="cuda", size=32, cuda_opt_in=["l2pf"])
    app.device_backend = _FakeCuda()
    from apps.stencil.cuda_gen import cuda_baseline

    with pytest.raises(ConfigurationError, match="l2pf"):
        bench._tune(app, [cuda_baseline()], 4, 1, "refused", str(tmp_path), 1)


def test_technique_options_reach_every_search_and_bad_ones_are_refused(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """``--technique-option partner=null``: a GPU search with the default as it was before session 30."""
    import ensemble.tune as et
    from scripts import bench_stencil_gpu as bench

    ns = _parse(bench, ["--part", "cuda", "--technique", "default", "--technique-option", "partner=null",
                        "--technique-option", "feasibility=forest", "--out", str(tmp_path)])
    assert ns.technique_options == {"partner": None, "feasibility": "forest"}
    seen: list[dict[str, Any]] = []

    class _Res:
        best_config = {"bx": 32}
        evaluations = 3

    def fake_tune(app: Any, **kw: Any) -> Any:
        seen.append(kw)
        return _Res()

    monkeypatch.setattr(et, "tune", fake_tune)
    best, how = bench._tune(object(), [], 3, 1, "x", str(tmp_path), 1, None, ["default"], None, ns.technique_options)
    assert best == {"bx": 32} and seen[0]["technique_options"] == {"partner": None, "feasibility": "forest"}
    assert "options={'partner': None, 'feasibility': 'forest'}" in how  # the record says how the search ran
    with pytest.raises(SystemExit):  # argparse's error: the message names KEY=VALUE
        _parse(bench, ["--part", "cuda", "--technique-option", "partner", "--out", str(tmp_path)])


def test_technique_options_a_technique_refuses_stop_the_benchmark_before_any_search(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    """A mistyped option, or one the fallback GA does not take, must not turn the searches into random sampling."""
    from scripts import bench_stencil_gpu as bench

    for argv, named in ((["--technique-option", "partnr=null"], "partnr"),   # a typo: default refuses it
                        (["--technique-option", "partner=null"], "GA")):     # default takes it, GA (tried next) not
        with pytest.raises(SystemExit):
            _parse(bench, ["--part", "cuda", *argv, "--out", str(tmp_path)])
        err = capsys.readouterr().err
        assert named in err and "--technique default" in err
