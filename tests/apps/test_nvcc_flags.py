"""nvcc flags app: space (CUDA 13 flags, dependencies), GPU detection, ptxas parsing, compile-only
tuning, the planted miscompile.

The compile-only objective needs nvcc but no GPU, so it runs in CI: every
test that runs nvcc carries the ``cuda`` marker (as tests/apps/test_stencil_cuda.py
does) and skips only where nvcc is missing.  Tests that run a CUDA program
also need a GPU and skip without one; the runtime objective is exercised by
scripts/gpu_nvcc_bench.sh on a GPU machine.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from apps.nvcc_flags.programs import PROGRAMS
from apps.nvcc_flags.ptxas import compile_cost, parse_ptxas
from apps.nvcc_flags.space import nvcc_flag_space

HAS_NVCC = shutil.which("nvcc") is not None


def needs_nvcc(obj):
    """Runs nvcc (no GPU needed): marked ``cuda``, skipped only where nvcc is missing."""
    return pytest.mark.cuda(pytest.mark.skipif(not HAS_NVCC, reason="nvcc not installed")(obj))


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


# -- the GPU architecture: detected, listed by nvcc, runnable on the GPU --------------------------

#: what nvcc 13.0 prints (``nvcc --list-gpu-arch`` / ``--list-gpu-code``), one name a line
NVCC13_ARCH = "".join(f"compute_{v}\n" for v in (75, 80, 86, 87, 88, 89, 90, 100, 110, 103, 120, 121))
NVCC13_CODE = NVCC13_ARCH.replace("compute_", "sm_")


def _outcome(stdout: str = "", rc: int = 0, stderr: str = ""):
    from measurement.process import CommandOutcome, CommandState

    return CommandOutcome(CommandState.OK if rc == 0 else CommandState.FAILED, rc, stdout, stderr, 0.01,
                          reason=None if rc == 0 else f"exit status {rc}")


def test_parse_nvidia_smi_and_nvcc_lists() -> None:
    from apps.nvcc_flags.gpu import (
        parse_compute_caps,
        parse_gpu_codes,
        parse_virtual_archs,
    )

    assert parse_compute_caps("9.0\n") == [(9, 0)]
    assert parse_compute_caps("8.6\n12.0\n") == [(8, 6), (12, 0)]
    assert parse_compute_caps("No devices were found\n") == []
    assert parse_virtual_archs(NVCC13_ARCH)[:2] == ["compute_75", "compute_80"]
    codes = parse_gpu_codes(NVCC13_CODE + "garbage\n")
    assert len(codes) == 12 and codes[0] == "sm_75" and "sm_121" in codes


@pytest.mark.parametrize("cap, expected", [
    ((9, 0), ["sm_90", "sm_90a", "compute_90", "sm_89", "sm_88", "sm_87", "sm_86", "sm_80", "sm_75"]),
    ((8, 6), ["sm_86", "compute_86", "sm_80", "sm_75"]),
    ((10, 3), ["sm_103", "sm_103a", "sm_103f", "sm_100f", "compute_103", "sm_100", "sm_90", "sm_89", "sm_88",
               "sm_87", "sm_86", "sm_80", "sm_75"]),
])
def test_arch_choices_are_what_nvcc_supports_and_the_gpu_runs(cap, expected) -> None:
    from apps.nvcc_flags.gpu import (
        arch_choices_for,
        parse_gpu_codes,
        parse_virtual_archs,
        runs_on,
    )

    choices = arch_choices_for(cap, parse_gpu_codes(NVCC13_CODE), parse_virtual_archs(NVCC13_ARCH))
    assert choices == expected
    assert all(runs_on(c, cap) for c in choices)
    # what does not run there is left out: newer SASS/PTX, another GPU's arch-specific code
    assert not {"sm_100", "sm_120", "sm_121", "compute_100"} & set(arch_choices_for((9, 0), parse_gpu_codes(NVCC13_CODE),
                                                                                     parse_virtual_archs(NVCC13_ARCH)))


def test_runs_on_rules() -> None:
    from apps.nvcc_flags.gpu import runs_on

    assert runs_on("sm_80", (9, 0)) and runs_on("sm_80", (8, 6))    # PTX JIT / same-major SASS
    assert not runs_on("sm_86", (8, 0)) and not runs_on("sm_100", (9, 0))
    assert runs_on("sm_90a", (9, 0)) and not runs_on("sm_90a", (10, 0))   # arch-specific: exactly 9.0
    assert runs_on("sm_100f", (10, 3)) and not runs_on("sm_100f", (12, 0))  # family: same major
    assert runs_on("compute_90", (10, 0)) and not runs_on("compute_90", (8, 9))


def test_gpu_arch_without_nvcc_lists_falls_back_to_native() -> None:
    from apps.nvcc_flags.gpu import arch_choices_for

    assert arch_choices_for((8, 9), [], []) == ["sm_89", "compute_89"]
    with pytest.raises(ValueError, match="no architecture"):
        arch_choices_for((7, 0), ["sm_75", "sm_80"], [])


def test_detect_gpu_arch_from_faked_nvidia_smi(monkeypatch) -> None:
    from apps.nvcc_flags.gpu import DEFAULT_GPU_ARCH, detect_gpu_arch, resolve_gpu_arch

    calls = []

    def smi(stdout: str, rc: int = 0):
        def run(argv, timeout=None):
            calls.append(argv)
            return _outcome(stdout, rc)
        return run

    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    got = detect_gpu_arch(run=smi("9.0\n"), use_pycuda=False)
    assert (got.arch, got.source, got.capability) == ("sm_90", "nvidia-smi", (9, 0))
    assert calls[-1] == ["nvidia-smi", "--query-gpu=compute_cap", "--format=csv,noheader"]
    assert detect_gpu_arch(run=smi("8.6\n12.0\n"), use_pycuda=False).arch == "sm_86"   # first GPU
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "1")
    assert detect_gpu_arch(run=smi("8.6\n12.0\n"), use_pycuda=False).arch == "sm_120"  # the visible one
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES")
    # no driver / no GPU: nvidia-smi fails; the documented default is used
    no_gpu = smi("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.", rc=9)
    assert detect_gpu_arch(run=no_gpu, use_pycuda=False) is None
    fallback = resolve_gpu_arch(None, run=no_gpu, use_pycuda=False)
    assert (fallback.arch, fallback.source) == (DEFAULT_GPU_ARCH, "default (no GPU found)")
    # --gpu-arch wins, and nothing is asked
    calls.clear()
    assert resolve_gpu_arch("sm_80", run=smi("9.0\n")).source == "--gpu-arch" and not calls
    with pytest.raises(ValueError, match="sm_90"):
        resolve_gpu_arch("hopper")


def _fake_nvidia_smi(tmp_path, monkeypatch, script: str) -> None:
    bindir = tmp_path / "bin"
    bindir.mkdir()
    exe = bindir / "nvidia-smi"
    exe.write_text("#!/bin/sh\n" + script)
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}:{os.environ['PATH']}")
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)


@needs_nvcc
def test_app_targets_the_gpu_present(tmp_path, monkeypatch) -> None:
    """A fake ``nvidia-smi`` on PATH reports an RTX 30x0 (8.6): reference build and space follow it."""
    from apps.nvcc_flags.app import NvccFlagsApp
    from apps.nvcc_flags.gpu import runs_on

    _fake_nvidia_smi(tmp_path, monkeypatch, 'echo "8.6"\n')
    app = NvccFlagsApp(program="gaussian", objective="runtime")
    ev = app.evaluator
    assert (ev.target, ev.gpu.source) == ("sm_86", "nvidia-smi")
    assert "-arch=sm_86" in ev.compile_argv([], "x")            # the -O3 reference build
    archs = ev.flags["gpu_architecture"].values()
    assert archs[0] == "sm_86" and "sm_80" in archs and "compute_86" in archs
    assert all(runs_on(a, (8, 6)) for a in archs) and "sm_90" not in archs and "sm_86a" not in archs
    assert app.render(ev.flags.default_config()) == ["--gpu-architecture=sm_86"]
    ev.close()
    # --gpu-arch overrides what is detected
    over = NvccFlagsApp(program="gaussian", objective="runtime", gpu_arch="sm_90")
    assert (over.evaluator.target, over.evaluator.gpu.source) == ("sm_90", "--gpu-arch")
    over.evaluator.close()


def test_app_without_gpu_uses_documented_default(tmp_path, monkeypatch) -> None:
    from apps.nvcc_flags import gpu
    from apps.nvcc_flags.app import NvccFlagsApp

    _fake_nvidia_smi(tmp_path, monkeypatch, 'echo "NVIDIA-SMI has failed" >&2\nexit 9\n')
    monkeypatch.setattr(gpu, "_pycuda_cap", lambda: None)
    app = NvccFlagsApp(program="gaussian", objective="compile")
    assert (app.evaluator.target, app.evaluator.gpu.source) == (gpu.DEFAULT_GPU_ARCH, "default (no GPU found)")
    app.evaluator.close()


# -- the planted miscompile: programs/precision.cu ------------------------------------------------

def test_precision_miscompile_is_rejected_on_the_cpu_side(tmp_path) -> None:
    """The output check given the program's IEEE output and its output under the unsafe flags.

    No GPU here, so the two outputs come from apps/nvcc_flags/precision.py, the
    program's arithmetic in NumPy float32 (bit-identical to the same
    arithmetic compiled for the CPU; on a GPU, test_precision_on_gpu checks it
    against the real -O3 build).
    """
    from apps.nvcc_flags.evaluator import CudaBuild, NvccEvaluator
    from apps.nvcc_flags.precision import precision_output

    n = 4096
    ieee = precision_output(n)
    ev = NvccEvaluator("precision", objective="runtime", flags=nvcc_flag_space(with_dlto=False), size=n)
    ev._reference = ieee
    try:
        assert ev.check(precision_output(n)) is None
        ftz = ev.check(precision_output(n, ftz=True))            # --ftz=true, --use_fast_math
        assert ftz is not None and ftz.startswith(f"{n} of {2 * n} output values differ")
        div = ev.check(precision_output(n, div_ulps=1))          # --prec-div=false: one ulp is enough
        assert div is not None and "differ from the -O3 build" in div
        # the whole runtime path: a stand-in binary writes the flushed output -> INVALID
        out = precision_output(n, ftz=True)
        data = tmp_path / "ftz.bin"
        out.tofile(data)
        exe = tmp_path / "prog"
        exe.write_text(f"#!/bin/sh\ncp {data} \"$1\"\necho time_ms 0.5\n")
        exe.chmod(0o755)
        res = ev.run(CudaBuild(str(exe), ["--use_fast_math"], 0.0))
        assert res.state == "INVALID" and "differ from the -O3 build" in res.reason
    finally:
        ev.close()


@needs_nvcc
def test_precision_flags_change_the_arithmetic_nvcc_emits(tmp_path) -> None:
    """Compile-only evidence, no GPU: the flags turn the IEEE instructions the program relies on
    into flushing / approximate ones (PTX), and the default keeps them."""
    from apps.nvcc_flags.programs import cuda_program
    from measurement.process import run_command

    prog = cuda_program("precision")

    def ptx(*flags: str) -> str:
        out = tmp_path / "p.ptx"
        res = run_command(["nvcc", "-ptx", "-arch=sm_90", *flags, "-I", str(prog.path.parent), str(prog.path),
                           "-o", str(out)], timeout=300)
        assert res.ok, res.stderr
        return out.read_text()

    ieee = ptx()
    assert "div.rn.f32" in ieee and "mul.f32" in ieee and ".ftz" not in ieee
    assert "mul.ftz.f32" in ptx("--ftz=true")
    assert "div.full.f32" in ptx("--prec-div=false")
    fast = ptx("--use_fast_math")
    assert "div.approx.ftz.f32" in fast and "mul.ftz.f32" in fast


@needs_nvcc
@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_every_program_compiles(name) -> None:
    """CI builds each bundled program: device code with ptxas -v (compile objective), and
    ``precision`` also as a full executable (host code, link) since only a GPU runs it."""
    from apps.nvcc_flags.evaluator import NvccEvaluator

    ev = NvccEvaluator(name, objective="compile", target="sm_90")
    try:
        res = ev.baseline()
        assert res.state == "OK", res.reason
        assert res.metrics["registers"] > 0
    finally:
        ev.close()
    if name == "precision":
        rt = NvccEvaluator(name, objective="runtime", target="sm_90", flags=nvcc_flag_space(with_dlto=False))
        try:
            build = rt.compile(rt.flags.default_config() | {"use_fast_math": True})
            assert build.failure is None and build.exe and os.access(build.exe, os.X_OK)
            assert len(build.kernels) == 3
        finally:
            rt.close()


@pytest.mark.cuda
@pytest.mark.skipif(not (HAS_NVCC and _has_gpu()), reason="needs nvcc and a CUDA GPU")
def test_precision_on_gpu() -> None:
    """The real program on the GPU: -O3 output equals the CPU model; the unsafe flags are INVALID."""
    from apps.nvcc_flags.evaluator import NvccEvaluator
    from apps.nvcc_flags.precision import precision_output

    n = 1 << 16
    ev = NvccEvaluator("precision", objective="runtime", size=n)
    try:
        base = ev.baseline()
        assert base.state == "OK", base.reason
        assert np.array_equal(ev.reference(), precision_output(n))
        d = ev.flags.default_config()
        for change in ({"use_fast_math": True}, {"ftz": "true"}, {"prec_div": "false"}):
            res = ev.evaluate(d | change)
            assert res.state == "INVALID", (change, res.state, res.reason)
        for change in ({"fmad": "false"}, {"ptxas_opt_level": 1}, {"prec_sqrt": "false"}):
            res = ev.evaluate(d | change)
            assert res.state == "OK", (change, res.state, res.reason)
    finally:
        ev.close()


def test_list_programs_from_the_command_line() -> None:
    root = Path(__file__).resolve().parents[2]
    proc = subprocess.run([sys.executable, "-m", "apps.nvcc_flags", "--list"], cwd=root, capture_output=True,
                          text=True, timeout=120, check=False, env=os.environ | {"PYTHONPATH": str(root)})
    assert proc.returncode == 0, proc.stderr
    listed = [ln.split()[0] for ln in proc.stdout.splitlines() if ln.strip()]
    assert listed == list(PROGRAMS) and "precision" in listed
