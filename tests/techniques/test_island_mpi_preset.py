"""The cstuner-ensemble preset under ``mpirun -n 2`` and ``-n 3``: every result in the database once.

The user's path: ``mpirun -n K python myapp.py --technique cstuner-ensemble``
(``TunerApp.main``).  This file is the MPI program too (``__main__``).  In the
default central mode rank 0 runs the bandit and every rank measures; in
per-rank mode every rank runs the preset and its csTuner sub-population
migrates over the MPI ring.  Either way the database is the only channel for
results, and no configuration may be measured twice.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.mpi_launch import MPIRUN, ROOT, need_mpi


def _need_mpi() -> None:
    need_mpi("scipy")


def _rows(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(str(db))
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("ranks,mode", [(2, "central"), (3, "central"), (3, "per-rank")])
def test_preset_under_mpirun_records_every_result_once(tmp_path: Path, ranks: int, mode: str) -> None:
    _need_mpi()
    db = tmp_path / "preset.db"
    env = dict(os.environ, ENSEMBLE_MPI_SEARCH=mode)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    proc = subprocess.run(
        [str(MPIRUN), "-n", str(ranks), sys.executable, __file__, str(db), "60"],
        check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    per_config = _rows(db, "SELECT q.configuration_id, COUNT(*) FROM results r JOIN requests q "
                           "ON q.id = r.request_id WHERE q.duplicate = 0 GROUP BY q.configuration_id")
    assert per_config and all(n == 1 for _, n in per_config)          # each configuration measured once
    results_per_request = _rows(db, "SELECT request_id, COUNT(*) FROM results GROUP BY request_id")
    assert all(n == 1 for _, n in results_per_request)                # each request has one result
    assert _rows(db, "SELECT COUNT(*) FROM requests WHERE state IN ('WAITING', 'RUNNING')")[0][0] == 0
    unique = _rows(db, "SELECT COUNT(DISTINCT configuration_id) FROM requests WHERE duplicate = 0 "
                       "AND state IN ('OK', 'FAILED', 'TIMEOUT', 'INVALID')")[0][0]
    assert unique >= 60
    workers = {w.rsplit(":", 1)[-1] for (w,) in _rows(
        db, "SELECT DISTINCT worker FROM requests WHERE state = 'OK' AND duplicate = 0")}
    assert workers == {f"rank{r}" for r in range(ranks)}             # every rank measured
    techniques = {t for (t,) in _rows(db, "SELECT DISTINCT technique FROM requests")}
    assert techniques & {"NelderMead", "SimulatedAnnealing", "CsTuner"}
    best_db = _rows(db, "SELECT MIN(value) FROM results WHERE state = 'OK'")[0][0]
    assert any(f"{best_db:g}" in line for line in proc.stdout.splitlines())   # rank 0 printed the best


def _main(argv: list[str]) -> None:
    from ensemble import Integer, PowerOfTwo, SearchSpace, TunerApp

    db, limit = argv[0], argv[1]

    class Stencilish(TunerApp):
        def space(self) -> SearchSpace:
            s = SearchSpace().add(PowerOfTwo("bx", 1, 64), PowerOfTwo("by", 1, 64), Integer("unroll", 1, 6),
                                  Integer("merge", 1, 4))
            s.require("bx * by <= 256")
            return s

        def run(self, config: dict, limit: float | None) -> float:
            time.sleep(0.01)
            return float(abs(config["bx"] - 32) / 8 + abs(config["by"] - 4) + (config["unroll"] - 3) ** 2
                         + config["merge"] + 1)

    status = Stencilish.main(["--database", f"sqlite:///{db}", "--run-name", "preset", "--technique",
                              "cstuner-ensemble", "--test-limit", limit, "--seed", "7", "--quiet"])
    raise SystemExit(status)


if __name__ == "__main__":
    _main(sys.argv[1:])
