"""Build, run and check a bundled CUDA program under an nvcc flag configuration.

Two objectives share the build step:

* ``runtime``: run the binary on the GPU, take its median kernel time and
  compare its output array with the ``nvcc -O3`` build's (INVALID when it
  differs beyond the program's tolerance);
* ``compile``: no GPU; the cost is :func:`apps.nvcc_flags.ptxas.compile_cost`
  of the ``ptxas -v`` report, with registers/spills/stack as metrics.
"""

from __future__ import annotations

import itertools
import os
import shutil
import threading
from dataclasses import dataclass, field
from typing import Any

from apps.flags.evaluation import Evaluation, owned_workdir, parse_key_values
from apps.flags.space import FlagSpace
from apps.nvcc_flags.gpu import resolve_gpu_arch
from apps.nvcc_flags.programs import CudaProgram, cuda_program
from apps.nvcc_flags.ptxas import KernelMetrics, compile_cost, parse_ptxas
from apps.nvcc_flags.space import nvcc_flag_space
from measurement.process import CommandState, run_command

__all__ = ["CudaBuild", "NvccEvaluator"]


@dataclass
class CudaBuild:
    exe: str | None
    flags: list[str]
    compile_s: float
    kernels: list[KernelMetrics] = field(default_factory=list)
    failure: Evaluation | None = None


class NvccEvaluator:
    """Compile/run/verify one bundled CUDA program with one nvcc.

    ``target`` (``sm_XY``) is the architecture of the reference build and of
    the compile-only objective; None detects the present GPU
    (:func:`apps.nvcc_flags.gpu.resolve_gpu_arch`; ``self.gpu.source`` says
    how it was chosen).
    """

    def __init__(self, prog: str | CudaProgram, *, objective: str = "runtime", target: str | None = None,
                 nvcc: str = "nvcc", size: int | None = None, compile_timeout: float = 300.0,
                 run_timeout: float = 120.0, workdir: str | None = None,
                 flags: FlagSpace | None = None) -> None:
        self.program = prog if isinstance(prog, CudaProgram) else cuda_program(prog)
        if objective not in ("runtime", "compile"):
            raise ValueError(f"objective={objective!r}: use 'runtime' or 'compile'")
        self.objective = objective
        self.gpu = resolve_gpu_arch(target)  # target None: the GPU present, else DEFAULT_GPU_ARCH
        self.target = self.gpu.arch
        self.nvcc = shutil.which(nvcc) or nvcc
        self.size = size
        self.compile_timeout = compile_timeout
        self.run_timeout = run_timeout
        self.workdir = owned_workdir(self, workdir, f"nvccflags-{self.program.name}-")
        self._flags = flags
        self._counter = itertools.count()
        self._lock = threading.Lock()
        self._reference: Any = None

    @property
    def flags(self) -> FlagSpace:
        if self._flags is None:
            self._flags = nvcc_flag_space(objective=self.objective, target=self.target, nvcc=self.nvcc)
        return self._flags

    def _next(self, suffix: str = "") -> str:
        with self._lock:
            return os.path.join(self.workdir, f"{self.program.name}-{next(self._counter)}{suffix}")

    def compile_argv(self, flag_argv: list[str], exe: str) -> list[str]:
        arch = [] if any(t.startswith("--gpu-architecture=") for t in flag_argv) else [f"-arch={self.target}"]
        device_only = ["-cubin"] if self.objective == "compile" else []
        return [self.nvcc, *device_only, "-O3", *arch, *flag_argv, "-Xptxas", "-v", *self.program.defines,
                "-I", str(self.program.path.parent), str(self.program.path), "-o", exe]

    def compile_flags(self, flag_argv: list[str], timeout: float | None = None) -> CudaBuild:
        exe = self._next(".cubin" if self.objective == "compile" else "")
        out = run_command(self.compile_argv(flag_argv, exe), timeout=timeout or self.compile_timeout,
                          max_output=256 << 10)
        if out.state is not CommandState.OK:
            state = "TIMEOUT" if out.state is CommandState.TIMEOUT else "FAILED"
            lines = [ln for ln in out.stderr.splitlines() if "fatal" in ln or "error" in ln]
            detail = (lines or out.stderr.strip().splitlines() or [""])[0][:300]
            return CudaBuild(None, flag_argv, out.wall_time,
                             failure=Evaluation(state, reason=f"nvcc {out.reason}: {detail}",
                                                metrics={"compile_s": out.wall_time}))
        return CudaBuild(exe, flag_argv, out.wall_time, parse_ptxas(out.stdout + "\n" + out.stderr))

    def compile(self, config: dict[str, Any]) -> CudaBuild:
        return self.compile_flags(self.flags.render(config))

    # -- compile-only objective ------------------------------------------------------
    def static_metrics(self, build: CudaBuild) -> Evaluation:
        if build.failure is not None:
            return build.failure
        self.discard(build)
        if not build.kernels:
            return Evaluation("FAILED", reason="ptxas -v reported no kernels (PTX-only build?)")
        cost = compile_cost(build.kernels)
        metrics = {
            "compile_cost": cost,
            "registers": float(sum(k.registers for k in build.kernels)),
            "max_registers": float(max(k.registers for k in build.kernels)),
            "spill_bytes": float(sum(k.spill_load_bytes + k.spill_store_bytes for k in build.kernels)),
            "stack_bytes": float(sum(k.stack_bytes for k in build.kernels)),
            "compile_s": build.compile_s,
        }
        return Evaluation("OK", time=cost, times=[cost], metrics=metrics)

    # -- runtime objective -------------------------------------------------------------
    def _execute(self, exe: str, timeout: float) -> tuple[Evaluation | None, dict[str, str], str]:
        out_path = self._next(".bin")
        argv = [exe, out_path] + ([str(self.size)] if self.size is not None else [])
        out = run_command(argv, timeout=timeout, max_output=64 << 10)
        if out.state is CommandState.TIMEOUT:
            return Evaluation("TIMEOUT", reason=f"run {out.reason}"), {}, out_path
        if out.state is not CommandState.OK:
            return Evaluation("FAILED", reason=f"run {out.reason}: {out.stderr.strip()[-200:]}"), {}, out_path
        kv = parse_key_values(out.stdout)
        if "time_ms" not in kv or not os.path.exists(out_path):
            return Evaluation("INVALID", reason="program printed no time_ms or wrote no output"), kv, out_path
        return None, kv, out_path

    def reference(self) -> Any:
        """Output array of the plain ``nvcc -O3`` build (computed once)."""
        import numpy as np

        if self._reference is None:
            build = self.compile_flags([])
            if build.exe is None:
                raise RuntimeError(f"reference -O3 build of {self.program.name} failed: {build.failure}")
            bad, _kv, path = self._execute(build.exe, self.run_timeout)
            self.discard(build)
            if bad is not None:
                raise RuntimeError(f"reference -O3 run of {self.program.name} failed: {bad.reason}")
            self._reference = np.fromfile(path, dtype=np.float32)
            os.unlink(path)
        return self._reference

    def check(self, got: Any) -> str | None:
        """None if ``got`` matches the -O3 output within the program's tolerance."""
        import numpy as np

        ref = self.reference()
        if got.shape != ref.shape:
            return f"output has {got.size} values, reference {ref.size}"
        atol = self.program.atol_scale * float(np.max(np.abs(ref))) if ref.size else 0.0
        bad = ~np.isclose(got, ref, rtol=self.program.rtol, atol=atol)
        if bad.any():
            i = int(np.argmax(bad))
            return (f"{int(bad.sum())} of {ref.size} output values differ from the -O3 build "
                    f"(first at {i}: {got[i]!r} vs {ref[i]!r}, rtol {self.program.rtol:g})")
        return None

    def run(self, build: CudaBuild, limit: float | None = None, *, keep: bool = False) -> Evaluation:
        """Measure (runtime) or score (compile) a build; ``keep`` leaves the binary for reruns."""
        if self.objective == "compile":
            return self.static_metrics(build)
        import numpy as np

        if build.failure is not None or build.exe is None:
            return build.failure or Evaluation("FAILED", reason="no binary")
        self.reference()
        timeout = min(limit, self.run_timeout) if limit else self.run_timeout
        try:
            bad, kv, path = self._execute(build.exe, timeout)
            if bad is not None:
                return bad
            reason = self.check(np.fromfile(path, dtype=np.float32))
            if reason is not None:
                return Evaluation("INVALID", reason=reason, metrics={"compile_s": build.compile_s})
            t = float(kv["time_ms"]) / 1e3
            regs = float(sum(k.registers for k in build.kernels))
            return Evaluation("OK", time=t, times=[t], metrics={"compile_s": build.compile_s, "registers": regs})
        finally:
            if not keep:
                self.discard(build)
            if "path" in locals() and os.path.exists(path):
                os.unlink(path)

    def evaluate(self, config: dict[str, Any], limit: float | None = None) -> Evaluation:
        return self.run(self.compile(config), limit)

    def baseline(self) -> Evaluation:
        """The plain ``nvcc -O3 -arch=<target>`` build."""
        return self.run(self.compile_flags([]))

    @staticmethod
    def discard(build: CudaBuild) -> None:
        if build.exe and os.path.exists(build.exe):
            os.unlink(build.exe)

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)
