"""Suite-wide guards.

A test that starts worker processes and fails half-way can leave a child
blocked (on a barrier, a queue, a lock) for ever; Python joins non-daemon
children at exit, so one such child would hang the whole pytest run instead of
failing one test.  Every test therefore ends with its leftover
``multiprocessing`` children stopped.
"""

from __future__ import annotations

import multiprocessing as mp

import pytest


def _stop_children(timeout: float = 5.0) -> list[str]:
    """Terminate (then kill) every live multiprocessing child; their names."""
    left = mp.active_children()
    for proc in left:
        proc.terminate()
    for proc in left:
        proc.join(timeout)
        if proc.is_alive():
            proc.kill()
            proc.join(timeout)
    return [p.name for p in left]


@pytest.fixture(autouse=True)
def _no_leftover_processes():
    yield
    _stop_children()


def pytest_sessionfinish(session, exitstatus):  # noqa: ARG001 - pytest hook signature
    _stop_children()
