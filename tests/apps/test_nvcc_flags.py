"""nvcc flags app: space (CUDA 13 flags, dependencies), ptxas parsing, compile-only tuning.

The compile-only objective needs nvcc but no GPU, so it runs in CI; the
runtime objective is exercised by scripts/gpu_nvcc_bench.sh on a GPU machine.
"""

from __future__ import annotations

import shutil
import subprocess

import numpy as np
import pytest

from apps.nvcc_flags.ptxas import compile_cost, parse_ptxas
from apps.nvcc_flags.space import nvcc_flag_space

HAS_NVCC = shutil.which("nvcc") is not None
needs_nvcc = pytest.mark.skipif(not HAS_NVCC, reason="nvcc not installed")


def _has_gpu() -> bool:
    if shutil.which("nvidia-smi") is None:
        return False
    return subprocess.run(["nvidia-smi", "-L"], capture_output=True, check=False).returncode == 0


PTXAS = """ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function '_Z9mm_sharedPKfS0_Pfi' for 'sm_90'
ptxas info    : Function properties for _Z9mm_sharedPKfS0_Pfi
    8 bytes stack frame, 12 bytes spill stores, 4 bytes spill loads
ptxas info    : Used 30 registers, used 1 barriers, 2176 bytes smem, 384 bytes cmem[0]
ptxas info    : Compiling entry function '_Z1kPf' for 'sm_90'
ptxas info    : Function properties for _Z1kPf
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 8 registers, used 0 barriers, 360 bytes cmem[0]
"""


def test_parse_ptxas_and_cost() -> None:
    ks = parse_ptxas(PTXAS)
    assert [(k.name, k.registers, k.stack_bytes, k.spill_store_bytes, k.spill_load_bytes, k.smem_bytes)
            for k in ks] == [("_Z9mm_sharedPKfS0_Pfi", 30, 8, 12, 4, 2176), ("_Z1kPf", 8, 0, 0, 0, 0)]
    assert compile_cost(ks) == 30 + 8 * 16 / 4 + 8 / 4 + 8
    with pytest.raises(ValueError, match="ptxas"):
        compile_cost([])


def test_runtime_space_flags_and_dependencies() -> None:
    fs = nvcc_flag_space(objective="runtime", target="sm_90", with_dlto=True)
    assert fs["gpu_architecture"].values()[0] == "sm_90"
    assert {"sm_90a", "compute_90", "sm_80"} <= set(fs["gpu_architecture"].values())
    d = fs.default_config()
    assert fs.render(d) == ["--gpu-architecture=sm_90"]
    # -dlto and --preserve-relocs only with relocatable device code
    assert not fs.is_valid(d | {"dlto": True})
    assert not fs.is_valid(d | {"preserve_relocs": True})
    ok = d | {"dlto": True, "preserve_relocs": True, "relocatable_device_code": True}
    assert fs.render(ok) == ["--gpu-architecture=sm_90", "--relocatable-device-code=true",
                             "-Xnvlink", "--preserve-relocs", "-dlto"]
    # --use_fast_math excludes the separate ftz/prec-div/prec-sqrt/fmad settings
    assert not fs.is_valid(d | {"use_fast_math": True, "ftz": "false"})
    assert fs.is_valid(d | {"use_fast_math": False, "ftz": "false", "maxrregcount": 64})
    assert fs.render(d | {"ptxas_opt_level": 2, "def_load_cache": "cg", "maxrregcount": 64})[1:] == [
        "-Xptxas", "--opt-level=2", "--maxrregcount=64", "-Xptxas", "--def-load-cache=cg"]


def test_compile_space_leaves_out_link_and_host_flags() -> None:
    fs = nvcc_flag_space(objective="compile", target="sm_90")
    assert not {"gpu_architecture", "dlto", "preserve_relocs", "no_align_double"} & set(fs.names)
    space = fs.to_search_space()
    for c in space.sample(np.random.default_rng(0), n=200):
        assert fs.is_valid(c)
        assert not (c["use_fast_math"] and c["ftz"] is not None)


def test_output_check_rejects_wrong_results() -> None:
    from apps.nvcc_flags.evaluator import NvccEvaluator

    ev = NvccEvaluator("gaussian", objective="runtime", flags=nvcc_flag_space(with_dlto=False))
    ref = np.linspace(-1.0, 1.0, 101, dtype=np.float32)
    ev._reference = ref
    assert ev.check(ref * (1 + 1e-5)) is None          # float noise: fine
    reason = ev.check(ref * 1.01)
    assert reason is not None and "differ from the -O3 build" in reason
    assert "values" in (ev.check(ref[:50]) or "")
    ev.close()


@pytest.fixture(scope="module")
def ev():
    from apps.nvcc_flags.evaluator import NvccEvaluator

    e = NvccEvaluator("matmul_shared_coalesced", objective="compile")
    yield e
    e.close()


@needs_nvcc
class TestCompileObjective:

    def test_baseline_metrics(self, ev) -> None:
        res = ev.baseline()
        assert res.state == "OK", res.reason
        assert res.metrics["registers"] > 0 and res.time == res.metrics["compile_cost"]

    def test_maxrregcount_lowers_registers(self, ev) -> None:
        base = ev.baseline()
        capped = ev.evaluate(ev.flags.default_config() | {"maxrregcount": 24})
        assert capped.state == "OK"
        assert capped.metrics["max_registers"] <= 24 < base.metrics["max_registers"]

    def test_rejected_flag_is_failed(self, ev) -> None:
        res = ev.run(ev.compile_flags(["-Xptxas", "--no-such-ptxas-option"]))
        assert res.state == "FAILED" and "no-such-ptxas-option" in res.reason

    def test_compile_timeout_is_typed(self, ev) -> None:
        assert ev.run(ev.compile_flags([], timeout=0.01)).state == "TIMEOUT"


@needs_nvcc
def test_tune_compile_objective_small_budget(tmp_path) -> None:
    """The CI tuning run: 6 unique evaluations of the compile-only objective."""
    from apps.nvcc_flags.app import NvccFlagsApp
    from ensemble.driver.local import run_app
    from ensemble.registry import create_technique
    from ensemble.settings import RunSettings

    app = NvccFlagsApp(program="gaussian", objective="compile")
    baseline = app.evaluator.baseline().time
    settings = RunSettings(test_limit=6, database=f"sqlite:///{tmp_path / 't.db'}", seed=3, quiet=True,
                           technique="Random")
    result = run_app(app, settings, technique=create_technique("Random", seed=3))
    assert result.evaluations == 6
    assert result.best_value <= baseline  # the -O3 default is seeded, so never worse
    assert app.evaluator.flags.is_valid(result.best_config)
    app.evaluator.close()


@pytest.mark.cuda
@pytest.mark.skipif(not (HAS_NVCC and _has_gpu()), reason="needs nvcc and a CUDA GPU")
def test_runtime_objective_on_gpu() -> None:
    from apps.nvcc_flags.evaluator import NvccEvaluator

    ev = NvccEvaluator("matmul_global_coalesced", objective="runtime", size=256)
    try:
        base = ev.baseline()
        assert base.state == "OK" and base.time > 0
        fm = ev.evaluate(ev.flags.default_config() | {"use_fast_math": True})
        assert fm.state in ("OK", "INVALID")
    finally:
        ev.close()


@needs_nvcc
@pytest.mark.slow
def test_gpu_bench_script_compile_path(tmp_path) -> None:
    """scripts/gpu_nvcc_bench.sh end to end, with the objective that needs no GPU."""
    import json
    import os
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    env = os.environ | {"PY": sys.executable, "NVCC_BENCH_LIMIT": "3", "OUT": str(tmp_path)}
    proc = subprocess.run(["bash", str(root / "scripts" / "gpu_nvcc_bench.sh"), "--objective", "compile",
                           "--programs", "gaussian"], capture_output=True, text=True, env=env, timeout=300,
                          check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    rows = json.loads((tmp_path / "nvcc_bench.json").read_text())
    assert rows[0]["program"] == "gaussian" and rows[0]["evaluations"] == 3
    assert rows[0]["ratio"] >= 1.0
    assert "gaussian" in proc.stdout and "x   flags:" in proc.stdout
