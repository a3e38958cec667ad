"""An exclusive lock on one device, shared by every process that measures on it.

Why: when several tuning processes share one GPU (``mpirun -n 2`` on a
one-GPU machine, or several runs started side by side to use the host's
CPUs for compiling), their timed launches overlap and disturb each other's
kernel times.  Compiling needs no lock; only the launches, timing and
verification do.  Holding an advisory ``flock`` on a file that every process
names makes the measurements take turns, so each kernel time is measured
alone on the device while the compiles still overlap.

The lock is advisory and per host (POSIX ``flock``): processes on other hosts
do not see it, and a process that does not name the file is not held back.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import time
from collections.abc import Iterator
from pathlib import Path

__all__ = ["DeviceLock"]


class DeviceLock:
    """``with lock.held() as waited_s: ...`` holds the device alone (``waited_s``: seconds spent waiting).

    The file is created if missing (its parent directory must exist) and is
    opened anew on each entry, so one object may be used from several
    threads of one process one after another (entries from two threads of one
    process at once also exclude each other: each entry has its own open
    file description, and ``flock`` locks those).
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        p = Path(path)
        if not p.parent.is_dir():
            raise ValueError(f"device lock path {str(p)!r}: its directory does not exist; "
                             "name a file in an existing directory (every process sharing the device must name the "
                             "same file)")
        self.path = p

    @contextlib.contextmanager
    def held(self) -> Iterator[float]:
        """Hold the lock; yields the seconds spent waiting for it."""
        fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o666)
        try:
            t = time.perf_counter()
            fcntl.flock(fd, fcntl.LOCK_EX)
            waited = time.perf_counter() - t
            try:
                yield waited
            finally:
                fcntl.flock(fd, fcntl.LOCK_UN)
        finally:
            os.close(fd)
