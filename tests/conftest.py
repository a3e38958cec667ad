"""Suite-wide guards.

A test that starts worker processes and fails half-way can leave a child
blocked (on a barrier, a queue, a lock) for ever; Python joins non-daemon
children at exit, so one such child would hang the whole pytest run instead of
failing one test.  Every test therefore ends with its leftover
``multiprocessing`` children stopped.

The suite runs on two pytest-xdist workers in CI (scripts/test.sh,
``--dist loadgroup``). Tests that share something outside their own
``tmp_path`` are kept on one worker, in order: the PostgreSQL tests share the
server's database (some of them its public schema), and the MPI tests each
start several ranks, which two at once would oversubscribe the machine with.
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


#: markers whose tests run on one xdist worker (see the module docstring)
SERIAL_GROUPS = ("server_db", "mpi")


def pytest_collection_modifyitems(config, items):
    if not config.pluginmanager.hasplugin("xdist"):
        return  # the marker is xdist's; without it the tests run in one process anyway
    for item in items:
        for name in SERIAL_GROUPS:
            if item.get_closest_marker(name) is not None:
                item.add_marker(pytest.mark.xdist_group(name=name))
                break


@pytest.fixture(autouse=True)
def _no_leftover_processes():
    yield
    _stop_children()


def pytest_sessionfinish(session, exitstatus):  # noqa: ARG001 - pytest hook signature
    _stop_children()
