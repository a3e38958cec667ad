"""``opentuner.measurement.interface``: MeasurementInterface, the class OpenTuner apps subclass.

Why it mirrors OpenTuner's methods one for one: apps override ``run`` (or
``compile`` + ``run_precompiled``, or ``compile_and_run``), ``manipulator``,
``objective``, ``seed_configurations`` and ``save_final_config``, read
``self.args`` and call ``self.call_program``; ``main(args)`` starts the run.
What happens between is ours: ``main`` hands the interface to
``ensemble.compat.opentuner._run.start_run``, which builds a TunerApp around
it (``_adapter``) and runs our drivers.
"""

from __future__ import annotations

import argparse
import hashlib
import logging
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from typing import Any

from ensemble.compat.opentuner import _flags
from ensemble.compat.opentuner.resultsdb.models import Result

__all__ = ["DefaultMeasurementInterface", "MeasurementInterface", "argparser"]

_log = logging.getLogger("ensemble.compat.opentuner")

#: OpenTuner's measurement-interface flags (``--parallel-compile``), as a parent parser
argparser = _flags.argparsers()[0]


def _default_args() -> argparse.Namespace:
    from ensemble.compat.opentuner._flags import argparsers

    return argparse.ArgumentParser(parents=argparsers()).parse_args([])


def _limit_memory(pid: int, memory_limit: int | None) -> None:
    """Cap the address space of the started process ``pid`` (no-op without a limit).

    Why after the start and not in a ``preexec_fn`` as OpenTuner does: a
    preexec function makes Python fork this large, threaded process by hand;
    measured here that added about 70 ms to every call (12 ms -> 85 ms for a
    12 ms program), which call_program's ``time`` would report. ``prlimit``
    on the new process leaves the fast spawn path; the program can allocate
    before the cap only in the microseconds between start and this call.
    """
    if not memory_limit:
        return
    import resource

    try:
        soft, hard = resource.prlimit(pid, resource.RLIMIT_AS)
        cap = lambda v: memory_limit if v == resource.RLIM_INFINITY else min(v, memory_limit)
        resource.prlimit(pid, resource.RLIMIT_AS, (cap(soft), cap(hard)))
    except (ValueError, OSError):
        pass  # already gone, or not permitted: run without the cap, as OpenTuner does


class MeasurementInterface:
    """Base class of OpenTuner apps: define manipulator() and run() (or the compile methods)."""

    #: lets ``ensemble-tuner run app.py`` recognise OpenTuner-style apps
    _ensemble_opentuner = True

    def __init__(self, args: argparse.Namespace | None = None, project_name: str | None = None,
                 program_name: str = "unknown", program_version: str = "unknown", manipulator: Any = None,
                 objective: Any = None, input_manager: Any = None, **_: Any) -> None:
        self.args = args if args is not None else _default_args()
        self._project = project_name
        self._program = program_name
        self._version = program_version
        self._manipulator = manipulator
        self._objective = objective
        self._input_manager = input_manager
        self.parallel_compile = bool(getattr(self.args, "parallel_compile", False))
        self.pids: list[int] = []
        self.pid_lock = threading.Lock()

    # -- what apps define ------------------------------------------------------
    def manipulator(self) -> Any:
        if self._manipulator is None:
            raise NotImplementedError(f"{type(self).__name__}.manipulator(): return a ConfigurationManipulator "
                                      "(or pass manipulator=... to the constructor)")
        return self._manipulator

    def objective(self) -> Any:
        if self._objective is None:
            from ensemble.compat.opentuner.search.objective import MinimizeTime

            return MinimizeTime()
        return self._objective

    def run(self, desired_result: Any, input: Any, limit: float) -> Result:
        raise NotImplementedError(f"{type(self).__name__}.run(desired_result, input, limit): measure "
                                  "desired_result.configuration.data and return Result(time=...)")

    def compile_and_run(self, desired_result: Any, input: Any, limit: float) -> Result:
        return self.run(desired_result, input, limit)

    def compile(self, config_data: Any, id: int) -> Any:
        """With --parallel-compile: build ``config_data`` in parallel; the return value goes to run_precompiled."""
        if self.parallel_compile:
            raise NotImplementedError(f"{type(self).__name__}.compile(config_data, id): needed by --parallel-compile")

    def run_precompiled(self, desired_result: Any, input: Any, limit: float, compile_result: Any, id: int) -> Any:
        if self.parallel_compile:
            raise NotImplementedError(f"{type(self).__name__}.run_precompiled(...): needed by --parallel-compile")

    def cleanup(self, id: int) -> None:
        """Remove what compile(id) left behind (called after run_precompiled)."""

    def pre_process(self) -> None:
        """Kept for OpenTuner apps; our drivers have no generations to call it around."""

    def post_process(self) -> None:
        """Kept for OpenTuner apps; see pre_process."""

    def extra_convergence_criteria(self, result: Any) -> bool:
        return False

    def seed_configurations(self) -> list[Any]:
        return []

    def save_final_config(self, configuration: Any) -> None:
        """Called with the best Configuration (``.data``) at the end; override to save it."""
        text = repr(configuration.data)
        _log.info("final configuration: %s", text[:256] + ("..." if len(text) > 256 else ""))

    def prefix_hook(self, session: Any) -> None:
        """Called once before tuning (OpenTuner passes its database session; we pass none that works)."""

    def input_manager(self) -> Any:
        return self._input_manager

    def project_name(self) -> str:
        if self._project is not None:
            return self._project
        return re.sub("(Measurement)?Interface$", "", type(self).__name__) or "unknown"

    def program_name(self) -> str:
        return self._program

    def program_version(self) -> str:
        return self._version

    def file_hash(self, filename: str) -> str:
        with open(filename, "rb") as fh:
            return hashlib.sha256(fh.read()).hexdigest()

    # -- helpers apps call --------------------------------------------------------
    def call_program(self, cmd: str | Sequence[str], limit: float | None = None,
                     memory_limit: int | None = None, **kwargs: Any) -> dict[str, Any]:
        """Run ``cmd`` (a string goes through the shell); kill its process group after ``limit`` s.

        Returns OpenTuner's dict: time (inf when killed), timeout, returncode, stdout, stderr (bytes).
        """
        if limit is not None and (limit <= 0 or limit == float("inf")):
            limit = None
        kwargs.setdefault("shell", isinstance(cmd, str))
        t0 = time.time()
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True,
                                **kwargs)
        _limit_memory(proc.pid, memory_limit)
        with self.pid_lock:
            self.pids.append(proc.pid)
        killed = False
        try:
            out, err = proc.communicate(timeout=limit)
        except subprocess.TimeoutExpired:
            killed = True
            self._kill(proc.pid)
            out, err = proc.communicate()
        except BaseException:
            self._kill(proc.pid)
            raise
        finally:
            with self.pid_lock:
                if proc.pid in self.pids:
                    self.pids.remove(proc.pid)
        return {"time": float("inf") if killed else time.time() - t0, "timeout": killed,
                "returncode": proc.returncode, "stdout": out, "stderr": err}

    @staticmethod
    def _kill(pid: int) -> None:
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            pass

    def kill_all(self) -> None:
        with self.pid_lock:
            for pid in self.pids:
                self._kill(pid)
            self.pids = []

    def as_tuner_app(self) -> Any:
        """A TunerApp around this interface (how ``ensemble-tuner worker`` processes rebuild the app)."""
        from ensemble.compat.opentuner._adapter import make_app

        return make_app(self)

    # -- entry point ----------------------------------------------------------------
    @classmethod
    def main(cls, args: argparse.Namespace | Sequence[str] | None = None, *pargs: Any, **kwargs: Any) -> int:
        """Tune with OpenTuner's flags in ``args`` (a namespace from argparsers() parents, or argv).

        Returns 0 on success; after an error it prints one line and exits with
        status 2 (SystemExit), as a failed OpenTuner run ends the script.
        """
        from ensemble.compat.opentuner._run import run_interface

        if args is None or not isinstance(args, argparse.Namespace):
            from ensemble.compat.opentuner._flags import argparsers

            parser = argparse.ArgumentParser(parents=argparsers())
            args = parser.parse_args(list(args) if args is not None else sys.argv[1:])
        return run_interface(cls, args, pargs, kwargs)


class DefaultMeasurementInterface(MeasurementInterface):
    """An interface for the ``api`` module: the caller measures, so run() is never called."""

    def run(self, desired_result: Any, input: Any, limit: float) -> Result:
        raise RuntimeError("DefaultMeasurementInterface.run(): measure the configurations yourself and "
                           "report them with TuningRunManager.report_result()")
