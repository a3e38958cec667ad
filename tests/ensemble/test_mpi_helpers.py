"""ensemble.mpi without a launcher: detection from the environment, device mapping, share_run."""

from __future__ import annotations

import json

import pytest

from ensemble.errors import EnsembleError
from ensemble.mpi import (
    MPIInfo,
    detect,
    device_index,
    search_mode,
    share_run,
    worker_name,
)


def test_no_launcher_means_no_mpi() -> None:
    assert detect({}) is None
    assert detect({"PMI_RANK": "1", "PMI_SIZE": "4", "ENSEMBLE_MPI": "0"}) is None


@pytest.mark.parametrize("env, expected", [
    ({"PMI_RANK": "2", "PMI_SIZE": "4", "MPI_LOCALRANKID": "0", "MPI_LOCALNRANKS": "2"}, (2, 4, 0, 2)),
    ({"OMPI_COMM_WORLD_RANK": "5", "OMPI_COMM_WORLD_SIZE": "8",
      "OMPI_COMM_WORLD_LOCAL_RANK": "1", "OMPI_COMM_WORLD_LOCAL_SIZE": "4"}, (5, 8, 1, 4)),
    ({"PMIX_RANK": "3", "PMIX_SIZE": "6"}, (3, 6, 3, 6)),
])
def test_detect_reads_launcher_variables(env: dict, expected: tuple) -> None:
    info = detect(env)
    assert info is not None
    assert (info.rank, info.size, info.local_rank, info.local_size) == expected
    assert info.is_root == (info.rank == 0)


def _info(local: int) -> MPIInfo:
    return MPIInfo(rank=local, size=8, local_rank=local, local_size=8, host="h")


def test_device_index_spreads_local_ranks_and_obeys_overrides() -> None:
    assert [device_index(_info(r), 4, env={}) for r in range(6)] == [0, 1, 2, 3, 0, 1]
    assert [device_index(_info(r), 4, env={"ENSEMBLE_DEVICES": "1,3"}) for r in range(4)] == [1, 3, 1, 3]
    assert device_index(_info(3), 4, override="2", env={"ENSEMBLE_DEVICES": "1,3"}) == 2
    assert device_index(_info(5), 2, override=[0, 1, 1], env={}) == 1
    assert device_index(None, 3, env={}) == 0


def test_device_index_errors_name_the_fix() -> None:
    with pytest.raises(EnsembleError, match="ENSEMBLE_DEVICES"):
        device_index(_info(0), 0, env={})
    with pytest.raises(EnsembleError, match="comma-separated"):
        device_index(_info(0), 2, env={"ENSEMBLE_DEVICES": "gpu0"})


def test_search_mode() -> None:
    assert search_mode({}) == "central"
    assert search_mode({"ENSEMBLE_MPI_SEARCH": "per-rank"}) == "per-rank"
    with pytest.raises(EnsembleError, match="central"):
        search_mode({"ENSEMBLE_MPI_SEARCH": "both"})


def test_worker_name_carries_rank() -> None:
    assert worker_name(_info(3)).endswith(":rank3")


class _Req:
    def Test(self) -> bool:
        return True


class _OneRankComm:
    """Enough of an mpi4py communicator for share_run on one rank."""

    def __init__(self, rank: int = 0) -> None:
        self.rank = rank
        self.sent: list[str] = []

    def Get_rank(self) -> int:
        return self.rank

    def Ibarrier(self) -> _Req:
        return _Req()

    def bcast(self, obj: str | None, root: int = 0) -> str:
        if obj is not None:
            self.sent.append(obj)
            return obj
        return self.sent[-1]


def test_share_run_returns_rank0_value_and_forwards_errors() -> None:
    comm = _OneRankComm()
    assert share_run(comm, lambda: {"run_id": 7, "name": "x"}) == {"run_id": 7, "name": "x"}

    def broken() -> dict:
        raise ValueError("space has no parameters")

    with pytest.raises(ValueError, match="no parameters"):
        share_run(comm, broken)
    # what the other ranks receive: the error, which they raise as EnsembleError
    assert json.loads(comm.sent[-1]) == {"ok": False, "error": "ValueError: space has no parameters"}
    other = _OneRankComm(rank=1)
    other.sent = list(comm.sent)
    with pytest.raises(EnsembleError, match="rank 0 could not open the run"):
        share_run(other, broken)


def _env(local: int, local_size: int, **extra: str) -> dict[str, str]:
    return {"PMI_RANK": str(local), "PMI_SIZE": str(local_size), "MPI_LOCALRANKID": str(local),
            "MPI_LOCALNRANKS": str(local_size), **extra}


def test_rank_device_binds_only_several_local_ranks_or_an_explicit_list() -> None:
    from ensemble.mpi import rank_device

    assert rank_device(4, env={}) is None                                  # plain python app.py
    assert rank_device(4, env=_env(0, 1)) is None                          # one rank on this host
    assert [rank_device(4, env=_env(r, 6)) for r in range(6)] == [0, 1, 2, 3, 0, 1]
    assert [rank_device(2, env=_env(r, 3)) for r in range(3)] == [0, 1, 0]
    assert rank_device(1, env=_env(2, 3)) == 0                             # one device (PoCL): all share it
    # one host of a multi-node job: the local rank picks, not the global one
    env = {"PMI_RANK": "5", "PMI_SIZE": "8", "MPI_LOCALRANKID": "1", "MPI_LOCALNRANKS": "4"}
    assert rank_device(4, env=env) == 1
    # ENSEMBLE_DEVICES wins, with or without MPI
    assert rank_device(4, env={"ENSEMBLE_DEVICES": "3"}) == 3
    assert [rank_device(4, env=_env(r, 4, ENSEMBLE_DEVICES="0,2")) for r in range(4)] == [0, 2, 0, 2]
    assert rank_device(4, env=_env(1, 2, ENSEMBLE_MPI="0")) is None        # MPI turned off
    assert rank_device(0, env=_env(1, 2)) is None                          # no device: the backend says so
