"""Run an external command with a time limit that cannot leak processes.

Compilers and benchmark binaries are the bread and butter of toolchain
tuning, and both misbehave: a flag combination sends ``gcc`` into an
endless loop, a miscompiled kernel spins forever, a build script forks
helpers that outlive it. ``subprocess.run(timeout=...)`` only kills the
direct child, so grandchildren keep the pipes open and the CPU busy.  This
module starts every command in its own session (``start_new_session``) and
on timeout signals the whole process group with ``os.killpg``.

Commands are argv lists, never shell strings: a configuration value can
never be interpreted by a shell.  Output is captured in a bounded buffer so
a chatty program cannot exhaust memory, and the outcome is a typed value
(OK / FAILED / TIMEOUT) rather than an exception, so a tuner can tell a
broken configuration from a slow one.
"""

from __future__ import annotations

import enum
import os
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import IO

from ensemble.errors import ConfigurationError

__all__ = ["CommandOutcome", "CommandState", "run_command"]

_KILL_GRACE_S = 0.5  # between SIGTERM and SIGKILL of the process group


class CommandState(str, enum.Enum):
    """How a command ended; the values match ``ensemble.TrialState`` names."""

    OK = "OK"
    FAILED = "FAILED"
    TIMEOUT = "TIMEOUT"


@dataclass(frozen=True)
class CommandOutcome:
    """Everything a tuner needs to know about one command execution.

    ``stdout``/``stderr`` are decoded (UTF-8, errors replaced) and hold at most
    ``max_output`` bytes each; ``truncated`` says whether anything was dropped.
    ``returncode`` is None when the command could not be started or was killed
    on timeout before it reported one.
    """

    state: CommandState
    returncode: int | None
    stdout: str
    stderr: str
    wall_time: float
    truncated: bool = False
    reason: str | None = None

    @property
    def ok(self) -> bool:
        """True when the command ran to completion with exit status 0."""
        return self.state is CommandState.OK


class _BoundedReader(threading.Thread):
    """Drain a pipe, keeping the first ``limit`` bytes and discarding the rest.

    Draining everything (rather than stopping at the limit) keeps the child
    from blocking on a full pipe.
    """

    def __init__(self, stream: IO[bytes], limit: int) -> None:
        super().__init__(daemon=True)
        self._stream = stream
        self._limit = limit
        self._chunks: list[bytes] = []
        self._kept = 0
        self.truncated = False

    def run(self) -> None:
        try:
            while True:
                chunk = self._stream.read1(65536) if hasattr(self._stream, "read1") else self._stream.read(65536)
                if not chunk:
                    break
                room = self._limit - self._kept
                if room > 0:
                    self._chunks.append(chunk[:room])
                    self._kept += min(room, len(chunk))
                if len(chunk) > room:
                    self.truncated = True
        except (OSError, ValueError):
            pass  # pipe closed under us after a kill
        finally:
            try:
                self._stream.close()
            except OSError:
                pass

    def text(self) -> str:
        return b"".join(self._chunks).decode("utf-8", errors="replace")


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    """SIGTERM then SIGKILL the whole process group of ``proc``."""
    try:
        pgid = os.getpgid(proc.pid)
    except ProcessLookupError:
        return
    for sig, wait_s in ((signal.SIGTERM, _KILL_GRACE_S), (signal.SIGKILL, None)):
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return
        try:
            proc.wait(timeout=wait_s if wait_s is not None else 5.0)
            if sig == signal.SIGTERM:
                # leader gone; make sure stragglers in the group die too
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                return
        except subprocess.TimeoutExpired:
            continue


def _check_argv(argv: Sequence[str]) -> list[str]:
    if isinstance(argv, (str, bytes)):
        raise ConfigurationError(
            "run_command(argv=...) got a string; pass a list of arguments "
            "such as ['gcc', '-O2', 'x.c'] (shell strings are never run)"
        )
    args = [os.fspath(a) for a in argv]
    if not args:
        raise ConfigurationError("run_command(argv=...) is empty; pass at least the program name")
    bad = [a for a in args if not isinstance(a, str)]
    if bad:
        raise ConfigurationError(f"run_command(argv=...) items must be str or path-like, got {bad!r}")
    return args


def run_command(
    argv: Sequence[str],
    *,
    timeout: float | None,
    cwd: str | os.PathLike[str] | None = None,
    env: Mapping[str, str] | None = None,
    max_output: int = 1 << 20,
    input: bytes | str | None = None,
) -> CommandOutcome:
    """Run ``argv`` (no shell) and return a typed :class:`CommandOutcome`.

    ``timeout`` is wall-clock seconds (None: no limit); when it expires the
    command's whole process group is killed and the state is TIMEOUT.  A
    program that cannot be started (not found, not executable) is FAILED
    with the reason, not an exception: for a tuner that is a property of the
    configuration.  ``env`` replaces the environment when given.
    """
    args = _check_argv(argv)
    if timeout is not None and timeout <= 0:
        raise ConfigurationError(f"run_command(timeout={timeout!r}) must be > 0 seconds or None")
    if max_output < 0:
        raise ConfigurationError(f"run_command(max_output={max_output!r}) must be >= 0 bytes")
    data = input.encode() if isinstance(input, str) else input
    start = time.perf_counter()
    try:
        proc = subprocess.Popen(
            args,
            cwd=cwd,
            env=dict(env) if env is not None else None,
            stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            start_new_session=True,
            close_fds=True,
        )
    except OSError as exc:
        return CommandOutcome(
            CommandState.FAILED, None, "", str(exc), time.perf_counter() - start,
            reason=f"cannot start {args[0]!r}: {exc.strerror or exc}",
        )
    assert proc.stdout is not None and proc.stderr is not None
    readers = [_BoundedReader(proc.stdout, max_output), _BoundedReader(proc.stderr, max_output)]
    for r in readers:
        r.start()
    if data is not None and proc.stdin is not None:
        def _feed() -> None:
            try:
                proc.stdin.write(data)  # type: ignore[union-attr]
                proc.stdin.close()  # type: ignore[union-attr]
            except (BrokenPipeError, OSError, ValueError):
                pass
        threading.Thread(target=_feed, daemon=True).start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
    finally:
        if proc.poll() is None:  # KeyboardInterrupt etc.: never leave the group behind
            _kill_group(proc)
    wall = time.perf_counter() - start
    # The leader exited; grandchildren may still hold the pipes open.  Give the
    # readers a moment, then kill whatever is left of the group.
    for r in readers:
        r.join(timeout=0.2 if not timed_out else 1.0)
    if any(r.is_alive() for r in readers):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for r in readers:
            r.join(timeout=2.0)
    out, err = readers[0].text(), readers[1].text()
    truncated = readers[0].truncated or readers[1].truncated
    if timed_out:
        return CommandOutcome(CommandState.TIMEOUT, None, out, err, wall, truncated,
                              reason=f"time limit of {timeout:g} s exceeded; process group killed")
    rc = proc.returncode
    if rc == 0:
        return CommandOutcome(CommandState.OK, rc, out, err, wall, truncated)
    if rc < 0:
        reason = f"killed by signal {signal.Signals(-rc).name}" if -rc in signal.Signals._value2member_map_ else f"killed by signal {-rc}"
    else:
        reason = f"exit status {rc}"
    return CommandOutcome(CommandState.FAILED, rc, out, err, wall, truncated, reason=reason)
