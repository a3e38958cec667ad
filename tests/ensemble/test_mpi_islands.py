"""Island migration over MPI: ``mpirun -n 3`` ranks, one island each, non-blocking ring.

The test launches this file under mpirun (found next to sys.executable, where
the venv's mpich puts it).  Rank 0's island starts next to the optimum; the
others must receive its individuals through the ring.  Rank 2 is made slow
(it sleeps longer every generation); sends and receives never wait for it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

MPIRUN = Path(sys.executable).parent / "mpirun"
ROOT = Path(__file__).resolve().parents[2]
OPT = (30, 1, 17)
SEED = (30, 1, 16)


def _mpi_env() -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _need_mpi() -> None:
    pytest.importorskip("mpi4py")
    pytest.importorskip("ensemble.technique")
    if not MPIRUN.exists():
        pytest.skip(f"no mpirun next to {sys.executable}; pip install 'ensemble-tuner[mpi]'")


@pytest.mark.mpi
def test_ring_migration_across_three_ranks(tmp_path: Path) -> None:
    _need_mpi()
    out = tmp_path / "islands.json"
    proc = subprocess.run(
        [str(MPIRUN), "-n", "3", sys.executable, __file__, str(out)],
        check=False, cwd=ROOT, env=_mpi_env(), capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    ranks = json.loads(out.read_text())
    assert len(ranks) == 3
    for r in (1, 2):
        got = [e for e in ranks[r]["migrations"] if e["event"] == "received"]
        assert any(e["from"] == 0 and list(SEED) in e["genomes"] for e in got), got
    assert ranks[1]["best"] <= 1.0 and ranks[2]["best"] <= 1.0
    # every island ran its generations; nobody waited for the slow rank 2 to send
    assert all(r["generations"] >= 12 for r in ranks)


def _main(path: str) -> None:
    import numpy as np

    from ensemble.mpi import MPIRing, comm_world, polite_barrier
    from techniques.island_ga import IslandModel

    comm = comm_world()
    rank = comm.Get_rank()
    ring = MPIRing(comm)
    f = lambda g: float(sum((a - b) ** 2 for a, b in zip(g, OPT)))
    model = IslandModel([32, 32, 32], lambda g: {"g": g}, np.random.default_rng(rank),
                        island_ids=[rank], n_islands=ring.size, transport=ring, population=8,
                        migration_interval=2, migrants=2, seeds={0: [SEED]} if rank == 0 else {})
    ga = model.islands[rank]

    def heard_from_0() -> bool:
        return any(e["event"] == "received" and e["from"] == 0 for e in model.migrations)

    polite_barrier(comm)                      # start together: launch skew is not the point
    deadline = time.monotonic() + 30
    # 12 generations each; a rank that has not heard from rank 0 yet keeps evolving (and
    # polling) a little longer, so a busy machine cannot make the test miss the message.
    while ga.generation < 12 or (rank != 0 and not heard_from_0() and time.monotonic() < deadline):
        for i, g in model.ask(8):
            model.tell(i, g, f(g))
        time.sleep(0.03 if rank == 2 else 0.005)   # rank 2 is the slow one
    late = ring.close()     # collective: completes sends, drains what is still in flight
    mine = {"rank": rank, "migrations": model.migrations, "generations": ga.generation,
            "best": ga.best(1)[0][1], "late": len(late)}
    everything = comm.gather(mine, root=0)
    if rank == 0:
        Path(path).write_text(json.dumps(sorted(everything, key=lambda d: d["rank"])))


if __name__ == "__main__":
    _main(sys.argv[1])
