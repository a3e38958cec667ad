"""MPI integration: rank detection, device binding, a shared run, a non-blocking ring.

Under ``mpirun -n N python myapp.py`` every rank is a full copy of the app.
This module is the MPI plumbing that lets those copies cooperate through the
results database instead of through MPI messages: rank 0 creates or resumes
the run and broadcasts its identity (:func:`share_run`), every rank measures
on its own device (:func:`device_index`), and the only MPI traffic after
start-up is the island GA's migration ring (:class:`MPIRing`) and a final
barrier.  How a run is set up and searched under MPI is the run session's
business (``ensemble.driver.mpi_loops``).  mpi4py is imported lazily, so the
same app runs unchanged without MPI.

Detection reads the launcher's environment first (no mpi4py import, no MPI
initialisation for plain ``python myapp.py``): Hydra/MPICH and Slurm's PMI
(``PMI_RANK``/``PMI_SIZE``), Open MPI (``OMPI_COMM_WORLD_*``), PMIx and
MVAPICH.  ``ENSEMBLE_MPI=0`` turns MPI off even under a launcher;
``ENSEMBLE_MPI=1`` forces it (asks mpi4py).
"""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ensemble.errors import EnsembleError, MissingExtraError

__all__ = [
    "MPIInfo",
    "MPIRing",
    "comm_world",
    "detect",
    "device_index",
    "polite_barrier",
    "rank_device",
    "search_mode",
    "share_run",
    "worker_name",
]

_log = logging.getLogger("ensemble.mpi")
T = TypeVar("T")

_RANK_VARS = (
    ("PMI_RANK", "PMI_SIZE"),
    ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ("PMIX_RANK", "PMIX_SIZE"),
    ("MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"),
)
_LOCAL_VARS = (
    "MPI_LOCALRANKID",            # MPICH Hydra
    "OMPI_COMM_WORLD_LOCAL_RANK",
    "MV2_COMM_WORLD_LOCAL_RANK",
    "SLURM_LOCALID",
    "PMI_LOCAL_RANK",
)
_LOCAL_SIZE_VARS = ("MPI_LOCALNRANKS", "OMPI_COMM_WORLD_LOCAL_SIZE", "MV2_COMM_WORLD_LOCAL_SIZE")


@dataclass(frozen=True)
class MPIInfo:
    """Where this process sits in the MPI job."""

    rank: int
    size: int
    local_rank: int      # rank among the processes of this host (selects the device)
    local_size: int
    host: str

    @property
    def is_root(self) -> bool:
        """Rank 0 creates/resumes the run and runs the search in the central mode."""
        return self.rank == 0


def _int(env: Mapping[str, str], names: Sequence[str]) -> int | None:
    for n in names:
        v = env.get(n)
        if v is not None and v.strip().lstrip("-").isdigit():
            return int(v)
    return None


def detect(env: Mapping[str, str] | None = None) -> MPIInfo | None:
    """MPIInfo when launched by an MPI launcher, else None (plain ``python app.py``)."""
    env = os.environ if env is None else env
    force = env.get("ENSEMBLE_MPI", "").strip().lower()
    if force in ("0", "off", "no", "false"):
        return None
    rank = size = None
    for rv, sv in _RANK_VARS:
        if rv in env and sv in env:
            rank, size = _int(env, [rv]), _int(env, [sv])
            break
    if (rank is None or size is None) and force in ("1", "on", "yes", "true"):
        comm = comm_world()
        rank, size = comm.Get_rank(), comm.Get_size()
    if rank is None or size is None:
        return None
    local = _int(env, _LOCAL_VARS)
    local_size = _int(env, _LOCAL_SIZE_VARS)
    return MPIInfo(
        rank=rank,
        size=size,
        local_rank=local if local is not None else rank,
        local_size=local_size if local_size is not None else size,
        host=socket.gethostname(),
    )


def comm_world() -> Any:
    """``mpi4py.MPI.COMM_WORLD`` (imports mpi4py; MissingExtraError when absent)."""
    try:
        from mpi4py import MPI
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MissingExtraError(
            "running under mpirun needs mpi4py: pip install 'ensemble-tuner[mpi]' "
            "(or set ENSEMBLE_MPI=0 to run every rank as an independent tuner)"
        ) from exc
    return MPI.COMM_WORLD


def device_index(
    info: MPIInfo | None,
    n_devices: int,
    override: str | Sequence[int] | None = None,
    env: Mapping[str, str] | None = None,
) -> int:
    """The device (GPU / OpenCL device index) this rank should use.

    Default: ``local_rank % n_devices``, so ranks on one host spread over its
    devices.  ``override`` (a flag value) or the ``ENSEMBLE_DEVICES``
    environment variable, a comma list such as ``"0,2,3"``, picks the devices
    to cycle through instead; a single value pins every rank to it.
    """
    env = os.environ if env is None else env
    spec: str | Sequence[int] | None = override if override is not None else env.get("ENSEMBLE_DEVICES")
    local = info.local_rank if info is not None else 0
    if spec is not None and spec != "":
        if isinstance(spec, str):
            try:
                devices = [int(x) for x in spec.split(",") if x.strip()]
            except ValueError as exc:
                raise EnsembleError(
                    f"devices={spec!r}: give comma-separated device indices, e.g. ENSEMBLE_DEVICES=0,1"
                ) from exc
        else:
            devices = [int(x) for x in spec]
        if not devices:
            raise EnsembleError(f"devices={spec!r} names no device; e.g. ENSEMBLE_DEVICES=0,1")
        return devices[local % len(devices)]
    if n_devices < 1:
        raise EnsembleError(f"n_devices={n_devices}: no device found; check the driver or set ENSEMBLE_DEVICES")
    return local % n_devices


def rank_device(n_devices: int, env: Mapping[str, str] | None = None) -> int | None:
    """The device a backend should open when its caller named none; None means "your usual default".

    What the measurement backends call (``measurement.cuda.CudaBackend``,
    ``measurement.opencl.OpenCLBackend``) when no device was given:

    * ``ENSEMBLE_DEVICES`` set (e.g. ``0,2``): :func:`device_index` over that
      list, with or without MPI (a single value pins every process to it);
    * under an MPI launcher with more than one rank on this host:
      ``local_rank % n_devices``, so the ranks of a node spread over its GPUs
      (or OpenCL devices) instead of all measuring on device 0;
    * otherwise None (one process, or one rank per host: nothing to spread).

    An explicit device (an app's ``--device`` flag) never reaches this function.
    """
    env = os.environ if env is None else env
    info = detect(env)
    if env.get("ENSEMBLE_DEVICES", "").strip():
        return device_index(info, n_devices, env=env)
    if info is None or info.local_size <= 1 or n_devices < 1:
        return None
    return device_index(info, n_devices, env=env)


def worker_name(info: MPIInfo | None) -> str:
    """The worker label stored with each claimed request (host, pid, rank)."""
    base = f"{socket.gethostname()}:{os.getpid()}"
    return f"{base}:rank{info.rank}" if info is not None else base


def share_run(comm: Any, create: Callable[[], T]) -> T:
    """Rank 0 calls ``create()`` (create or resume the run); every rank gets its result.

    The result must be JSON-able (e.g. ``{"run_id": 3, "name": "x"}``).  If
    rank 0 fails, every rank raises an EnsembleError with rank 0's message, so
    the job stops instead of hanging in a later collective call.
    """
    payload: str | None = None
    error: BaseException | None = None
    if comm.Get_rank() == 0:
        try:
            payload = json.dumps({"ok": True, "value": create()})
        except Exception as exc:  # noqa: BLE001 - forwarded to the other ranks, re-raised here
            payload = json.dumps({"ok": False, "error": f"{type(exc).__name__}: {exc}"})
            error = exc
    polite_barrier(comm)      # the others sleep (not spin) while rank 0 opens the run
    msg = json.loads(comm.bcast(payload, root=0))
    if error is not None:
        raise error
    if not msg["ok"]:
        raise EnsembleError(f"rank 0 could not open the run: {msg['error']}")
    value: T = msg["value"]
    return value


def polite_barrier(comm: Any, poll: float = 0.005) -> None:
    """A barrier that sleeps while it waits.

    MPICH's blocking collectives spin on the CPU; with more ranks than cores
    (``mpirun -n 8`` on a 2-core box, or ranks waiting while rank 0 sets up)
    the spinning ranks would steal the cores the working ranks need.
    """
    req = comm.Ibarrier()
    while not req.Test():
        time.sleep(poll)


class MPIRing:
    """Non-blocking point-to-point mailbox for island migration over MPI.

    ``send`` posts an ``isend`` of a JSON string and returns at once; ``poll``
    drains whatever has arrived (``iprobe`` + ``recv`` of messages already
    there) without waiting.  A slow rank therefore never stalls a fast one:
    migrants simply arrive a generation or two later.  Island ids are ranks.
    """

    TAG = 7311

    def __init__(self, comm: Any | None = None) -> None:
        self.comm = comm if comm is not None else comm_world()
        self.rank = int(self.comm.Get_rank())
        self.size = int(self.comm.Get_size())
        self._pending: list[Any] = []

    def send(self, src: int, dst: int, payload: dict[str, Any]) -> None:
        """Post a migration message from island ``src`` (this rank) to ``dst``."""
        if src != self.rank:
            raise EnsembleError(f"src={src}: an MPI rank can only send from its own island ({self.rank})")
        self._pending.append(self.comm.isend(json.dumps(payload), dest=dst, tag=self.TAG))
        self._pending = [r for r in self._pending if not r.Test()]

    def poll(self, dst: int) -> list[dict[str, Any]]:
        """Messages that have arrived for island ``dst`` (this rank); never blocks."""
        from mpi4py import MPI

        out = []
        status = MPI.Status()
        while self.comm.iprobe(source=MPI.ANY_SOURCE, tag=self.TAG, status=status):
            out.append(json.loads(self.comm.recv(source=status.Get_source(), tag=self.TAG)))
        return out

    def close(self, timeout: float = 5.0) -> list[dict[str, Any]]:
        """Collective end of migration: complete sends, barrier, drain late messages.

        Every rank must call it (it contains a barrier).  Messages still in
        flight at MPI finalisation make MPICH abort the job, so they are
        received here and returned (callers may log them or drop them).
        """
        deadline = time.monotonic() + timeout
        while self._pending and time.monotonic() < deadline:
            self._pending = [r for r in self._pending if not r.Test()]
            if self._pending:
                time.sleep(0.01)
        polite_barrier(self.comm)
        late = self.poll(self.rank)
        polite_barrier(self.comm)
        for r in self._pending:  # pragma: no cover - only when a peer is gone
            try:
                r.Cancel()
            except Exception:  # noqa: BLE001
                _log.debug("could not cancel a migration send")
        self._pending = []
        return late


# -- running an app under mpirun ------------------------------------------------

def search_mode(env: Mapping[str, str] | None = None) -> str:
    """``"central"`` (default) or ``"per-rank"``, from ``ENSEMBLE_MPI_SEARCH``.

    central: rank 0 runs the one search driver and every rank (rank 0 too)
    measures requests it claims from the database.  per-rank: every rank runs
    its own search driver (technique seeded with seed + rank) and measures its
    own requests while seeing everybody's results (it gives each rank its own
    island for the MPI-ring island GA).  Its drivers insert through
    ``Storage.submit``: a configuration another rank has in flight or measured
    is answered as a duplicate of that result, and test_limit counts every
    rank's evaluations (docs/MPI.md).
    """
    env = os.environ if env is None else env
    mode = env.get("ENSEMBLE_MPI_SEARCH", "central").strip().lower() or "central"
    if mode not in ("central", "per-rank"):
        raise EnsembleError(f"ENSEMBLE_MPI_SEARCH={mode!r}: use 'central' or 'per-rank'")
    return mode
