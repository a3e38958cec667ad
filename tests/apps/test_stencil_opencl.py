"""Garvey-style OpenCL kernels match NumPy for every pattern family and every optimisation.

Runs on PoCL (CI) or any OpenCL device; ENSEMBLE_TEST_OPENCL_PLATFORM picks the
platform (name part or index).  Skips when no platform can build a kernel.
"""

from __future__ import annotations

import os

import pytest

from apps.stencil.opencl_gen import opencl_baseline
from apps.stencil.patterns import PATTERNS, synthetic
from tests.apps.stencil_cases import OPENCL_OPTS, opencl_config

pytestmark = pytest.mark.opencl

_BACKEND: list = []


def _backend():  # type: ignore[no-untyped-def]
    if not _BACKEND:
        try:
            from measurement.opencl import OpenCLBackend

            be = OpenCLBackend(os.environ.get("ENSEMBLE_TEST_OPENCL_PLATFORM"),
                               os.environ.get("ENSEMBLE_TEST_OPENCL_DEVICE"))
            be.build("__kernel void probe(__global float *a) { a[0] = 1.0f; }")
            _BACKEND.append(be)
        except Exception as exc:  # noqa: BLE001 - no platform, or one that cannot compile here
            _BACKEND.append(exc)
    if isinstance(_BACKEND[0], Exception):
        pytest.skip(f"no usable OpenCL device ({str(_BACKEND[0]).splitlines()[0][:120]})")
    return _BACKEND[0]


def _run(st, config):  # type: ignore[no-untyped-def]
    from apps.stencil.runner import OpenCLStencilRunner

    return OpenCLStencilRunner(st, _backend(), repeats=1, warmup=0)(config)


@pytest.mark.parametrize("pattern", PATTERNS)
@pytest.mark.parametrize("dims", [1, 2, 3])
def test_every_pattern_family_matches_numpy(pattern: str, dims: int) -> None:
    st = synthetic(pattern, dims, 2, size=32, seed=dims)
    for cfg in (opencl_baseline(), opencl_config("local_vector")):
        res = _run(st, cfg)
        assert res.state == "OK", (cfg, res.reason)


@pytest.mark.parametrize("opt", list(OPENCL_OPTS))
@pytest.mark.parametrize("pattern,radius", [("box", 1), ("star", 3), ("thumbtack", 2)])
def test_every_optimisation_matches_numpy(opt: str, pattern: str, radius: int) -> None:
    st = synthetic(pattern, 3, radius, size=32)
    res = _run(st, opencl_config(opt))
    if res.state == "FAILED" and (res.reason or "").startswith("refused"):
        pytest.skip(f"device refused {opt}: {res.reason}")
    assert res.state == "OK", res.reason


def test_radius_zero_and_five() -> None:
    for r in (0, 5):
        assert _run(synthetic("diamond", 3, r, size=32), opencl_baseline()).state == "OK"


def test_double_precision_stencil() -> None:
    st = synthetic("star", 3, 1, size=32, dtype="float64")
    assert _run(st, opencl_config("vector8")).state == "OK"


def test_wrong_output_is_invalid() -> None:
    from apps.stencil.runner import OpenCLStencilRunner

    st = synthetic("star", 3, 1, size=32)
    runner = OpenCLStencilRunner(st, _backend(), repeats=1, warmup=0)
    runner.ref["out"][3, 4, 5] += 1.0
    res = runner(opencl_baseline())
    assert res.state == "INVALID" and "wrong output" in (res.reason or "")


def test_command_line_tunes_a_small_stencil(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The README demo, shrunk: ``python -m apps.stencil ... --backend opencl`` finds a valid best."""
    import json

    from apps.stencil.__main__ import main

    be = _backend()
    db = tmp_path / "t.db"
    rc = main(["--pattern", "star", "--dims", "3", "--radius", "1", "--backend", "opencl", "--size", "16",
               "--test-limit", "4", "--database", f"sqlite:///{db}", "--report", str(tmp_path / "r"), "--quiet",
               "--platform", os.environ.get("ENSEMBLE_TEST_OPENCL_PLATFORM") or be.platform_name])
    assert rc == 0
    best = json.loads((tmp_path / "r" / "best.json").read_text())
    assert best


def test_device_lock_is_held_for_each_measurement_and_its_wait_stored(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``--device-lock FILE``: each measured trial records how long it waited for the lock."""
    import json
    import sqlite3

    from apps.stencil.__main__ import main

    be = _backend()
    db = tmp_path / "t.db"
    rc = main(["--pattern", "star", "--dims", "2", "--radius", "1", "--backend", "opencl", "--size", "16",
               "--test-limit", "3", "--database", f"sqlite:///{db}", "--quiet", "--device-lock",
               str(tmp_path / "gpu.lock"),
               "--platform", os.environ.get("ENSEMBLE_TEST_OPENCL_PLATFORM") or be.platform_name])
    assert rc == 0
    con = sqlite3.connect(str(db))
    rows = [json.loads(m) for (m,) in con.execute("SELECT metrics_json FROM results WHERE state = 'OK'")]
    con.close()
    assert rows and all(r["device_lock_wait_s"] >= 0.0 for r in rows)
    assert (tmp_path / "gpu.lock").exists()
