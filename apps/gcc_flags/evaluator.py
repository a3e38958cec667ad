"""Build, run and check one bundled C program under a gcc flag configuration.

Kept apart from the TunerApp so the same code serves the app, the benchmark
script (baselines -O1/-O2/-O3) and the tests.  Every build goes to its own
file in a private work directory so builds can run in parallel
(OpenTuner-style: compile many, measure in order).
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import statistics
import threading
from dataclasses import dataclass
from typing import Any

from apps.flags.evaluation import (
    Evaluation,
    compare_outputs,
    owned_workdir,
    parse_key_values,
)
from apps.flags.gcc_discovery import discover_gcc
from apps.flags.space import FlagSpace
from apps.flags.spec import Choice
from apps.gcc_flags.programs import Program, program
from measurement.process import CommandState, run_command

__all__ = ["Build", "GccEvaluator"]

log = logging.getLogger("ensemble.apps.gcc_flags")

#: optimisation levels the tuner may start from; the flags refine the level.
#: "fast" (-Ofast = -O3 -ffast-math ...) is gcc's own level too; the output
#: check decides per program whether its value-unsafe math is acceptable.
LEVELS = ["2", "1", "3", "s", "fast"]


@dataclass
class Build:
    """A compiled binary, or the reason there is none."""

    exe: str | None
    argv: list[str]
    compile_s: float
    failure: Evaluation | None = None


class GccEvaluator:
    """Compile/run/verify for one program with one gcc.

    ``size`` is passed as argv[1] to the program (None: its built-in size);
    tests use tiny sizes.  The reference output is that of the ``-O2`` build.
    """

    def __init__(self, prog: str | Program, *, gcc: str = "gcc", size: int | None = None,
                 repeats: int = 3, compile_timeout: float = 120.0, run_timeout: float = 60.0,
                 workdir: str | None = None, flags: FlagSpace | None = None, statistic: str = "min") -> None:
        if statistic not in ("min", "median"):
            raise ValueError(f"statistic={statistic!r}: use 'min' or 'median'")
        self.statistic = statistic
        self.program = prog if isinstance(prog, Program) else program(prog)
        self.gcc = shutil.which(gcc) or gcc
        self.size = size
        self.repeats = repeats
        self.compile_timeout = compile_timeout
        self.run_timeout = run_timeout
        self.workdir = owned_workdir(self, workdir, f"gccflags-{self.program.name}-")
        self._flags = flags
        self._counter = itertools.count()
        self._lock = threading.Lock()
        self._reference: dict[str, str] | None = None

    # -- the space ----------------------------------------------------------------
    @property
    def flags(self) -> FlagSpace:
        """Opt level + every optimiser flag and param the installed gcc reports."""
        if self._flags is None:
            fs = discover_gcc(self.gcc, "-O2")
            level = Choice("opt_level", LEVELS, ["-O{}"])
            self._flags = FlagSpace([level, *fs.flags])
        return self._flags

    # -- building -----------------------------------------------------------------
    def compile_argv(self, flag_argv: list[str], exe: str) -> list[str]:
        return [self.gcc, *flag_argv, "-I", str(self.program.path.parent), str(self.program.path),
                "-o", exe, "-lm"]

    def compile_flags(self, flag_argv: list[str], timeout: float | None = None) -> Build:
        """Compile with explicit flag tokens (used for configs and -O baselines)."""
        with self._lock:
            exe = os.path.join(self.workdir, f"{self.program.name}-{next(self._counter)}")
        argv = self.compile_argv(flag_argv, exe)
        out = run_command(argv, timeout=timeout or self.compile_timeout, max_output=64 << 10)
        if out.state is CommandState.OK:
            return Build(exe, flag_argv, out.wall_time)
        state = "TIMEOUT" if out.state is CommandState.TIMEOUT else "FAILED"
        tail = (out.stderr.strip().splitlines() or [""])[-1][:300]
        return Build(None, flag_argv, out.wall_time,
                     Evaluation(state, reason=f"compile {out.reason}: {tail}",
                                metrics={"compile_s": out.wall_time}))

    def compile(self, config: dict[str, Any]) -> Build:
        return self.compile_flags(self.flags.render(config))

    # -- running --------------------------------------------------------------------
    def _run_once(self, exe: str, timeout: float) -> tuple[Evaluation | None, dict[str, str]]:
        argv = [exe] + ([str(self.size)] if self.size is not None else [])
        out = run_command(argv, timeout=timeout, max_output=64 << 10)
        if out.state is CommandState.TIMEOUT:
            return Evaluation("TIMEOUT", reason=f"run {out.reason}"), {}
        if out.state is not CommandState.OK:
            return Evaluation("FAILED", reason=f"run {out.reason}: {out.stderr.strip()[-200:]}"), {}
        kv = parse_key_values(out.stdout)
        if "time_s" not in kv:
            return Evaluation("INVALID", reason="program printed no time_s line"), kv
        return None, kv

    def reference(self) -> dict[str, str]:
        """Output of the -O2 build (computed once)."""
        if self._reference is None:
            build = self.compile_flags(["-O2"])
            if build.exe is None:
                raise RuntimeError(f"reference -O2 build of {self.program.name} failed: {build.failure}")
            bad, kv = self._run_once(build.exe, self.run_timeout)
            os.unlink(build.exe)
            if bad is not None:
                raise RuntimeError(f"reference -O2 run of {self.program.name} failed: {bad.reason}")
            self._reference = kv
        return self._reference

    def run(self, build: Build, limit: float | None = None, *, keep: bool = False) -> Evaluation:
        """Run ``repeats`` times; INVALID if the first run's output differs from -O2.

        The time is the minimum (default) or median of the repeats'
        self-reported kernel times; the raw times are kept.  The minimum is the
        default because on a shared machine other jobs only ever add time: the
        least-disturbed run is the best estimate of the build's own speed.
        ``limit`` bounds each run.
        """
        if build.failure is not None or build.exe is None:
            return build.failure or Evaluation("FAILED", reason="no binary")
        reference = self.reference()
        timeout = min(limit, self.run_timeout) if limit else self.run_timeout
        try:
            times: list[float] = []
            for i in range(self.repeats):
                bad, kv = self._run_once(build.exe, timeout)
                if bad is not None:
                    bad.metrics["compile_s"] = build.compile_s
                    return bad
                if i == 0:
                    reason = compare_outputs(reference, kv, rtol=self.program.rtol)
                    if reason is not None:
                        return Evaluation("INVALID", reason=reason, metrics={"compile_s": build.compile_s})
                times.append(float(kv["time_s"]))
        finally:
            if not keep and build.exe and os.path.exists(build.exe):
                os.unlink(build.exe)
        value = min(times) if self.statistic == "min" else statistics.median(times)
        return Evaluation("OK", time=value, times=times,
                          metrics={"compile_s": build.compile_s})

    def evaluate(self, config: dict[str, Any], limit: float | None = None) -> Evaluation:
        return self.run(self.compile(config), limit)

    def baseline(self, level: str) -> Evaluation:
        """Time of the plain ``-O<level>`` build."""
        return self.run(self.compile_flags([f"-O{level}"]))

    def close(self) -> None:
        shutil.rmtree(self.workdir, ignore_errors=True)
