"""Garvey & Abdelrahman's OpenCL space, suite and app flags (Scientific Programming 2018)."""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from types import SimpleNamespace

import pytest

from apps.stencil.garvey_suite import (
    garvey_benchmark,
    garvey_features,
    garvey_hints,
    garvey_suite,
    stratified_subset,
)
from apps.stencil.opencl_gen import opencl_baseline
from apps.stencil.patterns import synthetic
from apps.stencil.space import opencl_space
from ensemble.errors import ConfigurationError

ROOT = Path(__file__).resolve().parents[2]


def test_the_papers_example_counts_475875_configurations() -> None:
    # Sec. 4.7: "These restrictions reduce the optimization space to 475,875 possible configurations."
    assert opencl_space(synthetic("star", 3, 1, size=256)).count_valid(limit=10**7) == 475_875
    # our generator's wider space is still there, as an option
    assert opencl_space(synthetic("star", 3, 1, size=256), "extended").count_valid(limit=10**7) == 447_976


def test_paper_restrictions() -> None:
    s = opencl_space(synthetic("star", 3, 1, size=64))
    base = opencl_baseline()
    assert s.is_valid(base)
    assert s.is_valid({**base, "wgx": 16, "bmx": 4, "vx": 4})          # global with vectorisation
    assert not s.is_valid({**base, "bmx": 2, "vx": 2, "mem": "local"})  # vectorisation only with global memory
    assert not s.is_valid({**base, "bmx": 2, "vx": 2, "mem": "image"})
    assert not s.is_valid({**base, "bmy": 2})                           # no block merging in y, z
    assert not s.is_valid({**base, "bmx": 4, "vx": 2})                  # BX > VX excluded
    assert not s.is_valid({**base, "bmx": 2, "vx": 4})                  # VX <= BX
    assert not s.is_valid({**base, "wgx": 32, "cmx": 4})                # W*B*C <= N
    assert s.is_valid({**base, "wgx": 64, "wgy": 64})                   # 4096 work-items: the device refuses
    with pytest.raises(ValueError, match="preset"):
        opencl_space(synthetic("star", 3, 1, size=64), "fast")


def test_suite_is_table_2() -> None:
    suite = garvey_suite()
    assert len(suite) == 104 and len({b.name for b in suite}) == 104
    dims = Counter((b.pattern, b.dims) for b in suite)
    assert dims == {("star", 2): 15, ("star", 3): 5, ("thumbtack", 3): 15, ("diamond", 2): 12,
                    ("diamond", 3): 4, ("nocorners", 2): 12, ("nocorners", 3): 5, ("box", 1): 16,
                    ("box", 2): 15, ("box", 3): 5}
    radius = Counter((b.pattern, b.radius) for b in suite)
    for p, per in {"star": [0, 4, 4, 4, 4, 4], "thumbtack": [0, 3, 3, 3, 3, 3], "diamond": [0, 0, 4, 4, 4, 4],
                   "nocorners": [0, 1, 4, 4, 4, 4], "box": [1, 7, 7, 7, 7, 7]}.items():
        assert [radius[(p, r)] for r in range(6)] == per, p
    sub = stratified_subset(10)
    assert len(sub) == 10 and len({(b.pattern, b.dims) for b in sub}) == 10


def test_orientations_and_features() -> None:
    xy = garvey_benchmark("star2d_r2_z").stencil(32)
    yz = garvey_benchmark("star2d_r2_x").stencil(32)
    assert xy.halo == (0, 2, 2) and yz.halo == (2, 2, 0)
    pin = garvey_benchmark("thumbtack3d_r3_x").stencil(32)
    assert pin.halo[2] == 3
    f = garvey_features("star", 2, 1, "x")
    assert f == {"size": 5, "dims": 2, "density": 5 / 9, "unique": "x"}
    assert garvey_features("box", 3, 2, None)["density"] == 1.0
    assert garvey_features("box", 1, 0, None) == {"size": 1, "dims": 1, "density": 1.0, "unique": "none"}


def test_bad_input_gives_clear_errors() -> None:
    with pytest.raises(ValueError, match="pattern='hexagon' is unknown"):
        synthetic("hexagon", 2, 1)
    with pytest.raises(ValueError, match="radius=6 must be between 0 and 5"):
        synthetic("star", 2, 6)
    with pytest.raises(ConfigurationError, match="not in the Garvey suite"):
        garvey_benchmark("star2d_r9_x")


def test_device_refusals_happen_before_compiling() -> None:
    from apps.stencil.runner import OpenCLStencilRunner

    st = synthetic("star", 3, 1, size=16)
    r = OpenCLStencilRunner.__new__(OpenCLStencilRunner)
    r.st, r.image_layout = st, "2d"
    r.backend = SimpleNamespace(max_work_group_size=256, max_work_item_sizes=[256, 256, 64], local_mem_size=1024,
                                device=SimpleNamespace(image2d_max_height=64, image2d_max_width=64))
    base = {**opencl_baseline(), "wgx": 16, "wgy": 16}
    assert r.refusal(base) is None
    assert "work-group of 512" in r.refusal({**base, "wgz": 2})
    assert "local tile" in r.refusal({**base, "mem": "local"})
    assert "2-D image" in r.refusal({**base, "mem": "image"})  # 18 x 18 rows > 64
    assert r.build({**base, "wgz": 2}).reason.startswith("refused:")


def test_app_flags_select_the_suite_and_hand_hints_to_the_technique() -> None:
    from apps.stencil.app import StencilApp

    app = StencilApp(argparse.Namespace(suite="garvey", benchmark="diamond2d_r3_y", size=32, backend="opencl",
                                        heuristic="dims", loading="local"))
    s = app.space()
    h = s.hints["garvey"]
    assert h["heuristic"] == "dims" and h["loading"] == "local"
    assert h["constants"] == {"NX": 32, "NY": 32, "NZ": 32} and h["features"]["unique"] == "y"
    assert h == {**garvey_hints(app.stencil), "heuristic": "dims", "loading": "local"}
    with pytest.raises(ConfigurationError, match="not in the Garvey suite"):
        StencilApp(argparse.Namespace(suite="garvey", benchmark="nope", backend="opencl"))


def test_malformed_heuristic_file_is_one_line_on_the_command_line(tmp_path: Path) -> None:
    bad = tmp_path / "bad.spec"
    bad.write_text("WX=1:NX:*2,\nCX=1:NX/WX:;\n")
    out = subprocess.run([sys.executable, "-m", "apps.stencil", "--suite", "garvey", "--size", "16",
                          "--technique", "garvey", "--heuristic", str(bad), "--test-limit", "1",
                          "--database", f"sqlite:///{tmp_path}/x.db"],
                         check=False, capture_output=True, text=True, cwd=str(ROOT),
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert out.returncode != 0
    assert f"{bad}:2:12" in out.stderr + out.stdout
    assert "Traceback" not in out.stderr


@pytest.mark.opencl
@pytest.mark.slow
def test_tune_with_garvey_end_to_end_on_opencl(tmp_path: Path) -> None:
    from measurement.opencl import opencl_available

    if not opencl_available():
        pytest.skip("no OpenCL platform")
    out = subprocess.run([sys.executable, "-m", "apps.stencil", "--suite", "garvey", "--benchmark", "star2d_r1_y",
                          "--size", "16", "--technique", "garvey", "--heuristic", "dims", "--loading", "image",
                          "--test-limit", "6", "--repeats", "2", "--quiet",
                          "--database", f"sqlite:///{tmp_path}/g.db"],
                         check=False, capture_output=True, text=True, cwd=str(ROOT),
                         env={**os.environ, "PYTHONPATH": str(ROOT)},
                         timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "found by garvey" in out.stdout and '"mem": "image"' in out.stdout


@pytest.mark.opencl
@pytest.mark.slow
def test_tune_with_garvey_and_the_shipped_predictor_on_opencl(tmp_path: Path) -> None:
    from measurement.opencl import opencl_available

    if not opencl_available():
        pytest.skip("no OpenCL platform")
    out = subprocess.run([sys.executable, "-m", "apps.stencil", "--suite", "garvey", "--benchmark", "box1d_r1_x",
                          "--size", "16", "--technique", "garvey", "--test-limit", "4", "--repeats", "2", "--quiet",
                          "--database", f"sqlite:///{tmp_path}/p.db"],
                         check=False, capture_output=True, text=True, cwd=str(ROOT),
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, timeout=600)
    assert out.returncode == 0, out.stderr[-2000:]
    assert "found by garvey" in out.stdout


def test_a_device_that_refuses_every_work_group_ends_the_search_without_a_result(caplog: pytest.LogCaptureFixture) -> None:
    """Bad input: every work-group size of every group refused (documented fallback, GARVEY.md item 7)."""
    from apps.stencil.runner import OpenCLStencilRunner
    from techniques.garvey import Garvey
    from tests.techniques.driven import run_technique

    st = synthetic("star", 2, 1, size=8, unique="z")
    r = OpenCLStencilRunner.__new__(OpenCLStencilRunner)
    r.st, r.image_layout = st, "2d"
    r.backend = SimpleNamespace(max_work_group_size=0, max_work_item_sizes=[0, 0, 0], local_mem_size=0,
                                device=SimpleNamespace(image2d_max_height=0, image2d_max_width=0))
    assert "work-group" in r.refusal(opencl_baseline())
    t = Garvey(heuristic="hybrid", loading="local", repeats=1, hints=garvey_hints(st))
    log = run_technique(t, opencl_space(st), lambda c: float("inf") if r.refusal(c) else 1.0,
                        budget=10**6, seed=0, batch=10**4)
    assert t.done and log.unique > 0 and log.best_value == float("inf")
    assert any("failed" in m.lower() or "refus" in m.lower() for m in caplog.messages)


@pytest.mark.opencl
def test_cyclic_loops_stay_rolled_when_unrolling_would_exceed_the_load_bound() -> None:
    """Build time (GARVEY.md, "Build time"): points x loads above MAX_UNROLLED_LOADS keeps the cyclic loops rolled."""
    from apps.stencil.opencl_gen import MAX_UNROLLED_LOADS, generate_opencl
    from apps.stencil.runner import OpenCLStencilRunner
    from measurement.opencl import OpenCLBackend, opencl_available

    st = garvey_benchmark("nocorners3d_r2_none").stencil(16)  # 117 loads per point
    base = {"wgx": 4, "wgy": 2, "wgz": 2, "bmx": 1, "bmy": 1, "bmz": 1, "vx": 1, "mem": "global"}
    eight = {**base, "cmx": 2, "cmy": 2, "cmz": 2}   # 8 x 117 = 936 loads: unrolled
    sixteen = {**base, "cmx": 4, "cmy": 2, "cmz": 2}  # 16 x 117 = 1872 loads: rolled
    assert 8 * 117 <= MAX_UNROLLED_LOADS < 16 * 117
    assert "#pragma unroll 1" not in generate_opencl(st, eight, limits=False).source
    assert "#pragma unroll 1" in generate_opencl(st, sixteen, limits=False).source
    assert "#pragma unroll 1" not in generate_opencl(st, sixteen, limits=False, large_loops="compiler").source
    if not opencl_available():
        pytest.skip("no OpenCL platform")
    be = OpenCLBackend(os.environ.get("ENSEMBLE_TEST_OPENCL_PLATFORM"), os.environ.get("ENSEMBLE_TEST_OPENCL_DEVICE"))
    runner = OpenCLStencilRunner(st, be, limits=False, image_layout="2d", repeats=1, warmup=0)
    for mem in ("global", "local", "image"):
        res = runner({**sixteen, "mem": mem})
        assert res.state == "OK", (mem, res.reason)
