"""A tuning run under ``mpirun -n 3``: one database, every rank measures, nothing measured twice.

The tests launch this file under mpirun (found next to sys.executable); the
``__main__`` block is the MPI program.  It tunes a small app whose trials
sleep a little, so every rank gets work.  With ``--kill-rank R --kill-after K``
rank R SIGKILLs itself after K trials: the launcher then takes the whole job
down, which leaves requests RUNNING in the database, as a crashed job would.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.mpi_launch import MPIRUN, ROOT, need_mpi


def _need_mpi() -> None:
    need_mpi("ensemble.driver")


def _launch(db: Path | str, out: Path, *extra: str, n: int = 3, mode: str = "central",
            ) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ, ENSEMBLE_MPI_SEARCH=mode)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    return subprocess.run(
        [str(MPIRUN), "-n", str(n), sys.executable, __file__, str(db), str(out), *extra],
        check=False, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )


def _rows(db: Path, sql: str) -> list[tuple]:
    con = sqlite3.connect(str(db))
    try:
        return con.execute(sql).fetchall()
    finally:
        con.close()


def _measured_per_config(db: Path) -> list[tuple]:
    return _rows(db, "SELECT q.configuration_id, COUNT(*) FROM results r JOIN requests q ON q.id = r.request_id "
                     "WHERE q.duplicate = 0 GROUP BY q.configuration_id")


@pytest.mark.mpi
@pytest.mark.slow
def test_three_ranks_share_one_run(tmp_path: Path) -> None:
    _need_mpi()
    db, out = tmp_path / "mpi.db", tmp_path / "out.json"
    proc = _launch(db, out, "--limit", "45")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert [r["rank"] for r in res] == [0, 1, 2]
    assert len({r["run_name"] for r in res}) == 1                  # every rank saw the same run
    workers = {w for (w,) in _rows(db, "SELECT DISTINCT worker FROM requests WHERE state = 'OK' AND duplicate = 0")}
    assert {w.rsplit(":", 1)[-1] for w in workers} == {"rank0", "rank1", "rank2"}
    assert all(n == 1 for _, n in _measured_per_config(db))          # each configuration measured once
    best_db = _rows(db, "SELECT MIN(value) FROM results WHERE state = 'OK'")[0][0]
    assert res[0]["best_value"] == pytest.approx(best_db)
    assert all(r["best_value"] == res[0]["best_value"] for r in res)  # broadcast to every rank
    unique = _rows(db, "SELECT COUNT(*) FROM requests WHERE duplicate = 0 AND state = 'OK'")[0][0]
    assert unique >= 45 and res[0]["evaluations"] >= 45


@pytest.mark.mpi
@pytest.mark.slow
def test_parallelism_gives_each_rank_several_measuring_threads(tmp_path: Path) -> None:
    """Central mode with ``--parallelism 3``: every rank measures in three threads, nothing twice."""
    _need_mpi()
    db, out = tmp_path / "mpi.db", tmp_path / "out.json"
    proc = _launch(db, out, "--limit", "60", "--parallelism", "3", "--sleep", "0.05", n=2)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    workers = [w for (w,) in _rows(db, "SELECT worker FROM requests WHERE state = 'OK' AND duplicate = 0")]
    labels = {w.rsplit(":", 1)[-1] for w in workers}
    for rank in ("rank0", "rank1"):   # each rank's trials came from more than one of its threads
        assert len({lab for lab in labels if lab.split(".")[0] == rank}) >= 2, labels
    assert all(n == 1 for _, n in _measured_per_config(db))          # each configuration measured once
    assert sum(r["measured_here"] for r in res) == res[0]["measured_total"] >= 60


@pytest.mark.mpi
@pytest.mark.slow
def test_killed_rank_loses_nothing_and_resume_reclaims(tmp_path: Path) -> None:
    _need_mpi()
    db, out = tmp_path / "mpi.db", tmp_path / "out.json"
    proc = _launch(db, out, "--limit", "60", "--kill-rank", "2", "--kill-after", "4")
    assert proc.returncode != 0                                      # the job died
    committed = _rows(db, "SELECT id, request_id, value FROM results ORDER BY id")
    running = _rows(db, "SELECT id FROM requests WHERE state = 'RUNNING'")
    assert committed and running, "the crash should leave results and in-flight requests"
    proc = _launch(db, out, "--limit", "60", "--resume")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert res[0]["reclaimed"] >= len(running)
    after = {rid: (req, v) for rid, req, v in _rows(db, "SELECT id, request_id, value FROM results")}
    assert all(after[rid] == (req, v) for rid, req, v in committed)   # nothing committed was lost
    states = dict(_rows(db, "SELECT id, state FROM requests"))
    assert all(states[rid] not in ("RUNNING", "WAITING") for (rid,) in running)  # reclaimed and measured
    assert all(n == 1 for _, n in _measured_per_config(db))


@pytest.mark.mpi
@pytest.mark.slow
def test_per_rank_search_island_ga_migrates_over_mpi(tmp_path: Path) -> None:
    _need_mpi()
    db, out = tmp_path / "mpi.db", tmp_path / "out.json"
    proc = _launch(db, out, "--limit", "60", "--island-log", mode="per-rank")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert all(r["measured_here"] > 0 for r in res)
    # every rank's island received migrants from both ring neighbours through MPI
    for r in res:
        assert set(r["received_from"]) == {(r["rank"] - 1) % 3, (r["rank"] + 1) % 3}
    best_db = _rows(db, "SELECT MIN(value) FROM results WHERE state = 'OK'")[0][0]
    assert res[0]["best_value"] == pytest.approx(best_db)


@pytest.mark.mpi
@pytest.mark.slow
@pytest.mark.parametrize("technique", ["default", "IslandGA"])
def test_per_rank_search_measures_each_configuration_once_within_test_limit(tmp_path: Path, technique: str) -> None:
    """Per-rank search on a small space (64 points, test_limit 40): three drivers, one budget, no repeats.

    Before Storage.submit, this measured configurations twice (16 at 8 ranks in the bench) and
    each rank's driver counted only its own evaluations against test_limit.
    """
    _need_mpi()
    db, out = tmp_path / "mpi.db", tmp_path / "out.json"
    proc = _launch(db, out, "--limit", "40", "--side", "8", "--technique", technique, mode="per-rank")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads(out.read_text())
    assert all(n == 1 for _, n in _measured_per_config(db))          # no configuration measured twice
    unique = _rows(db, "SELECT COUNT(DISTINCT configuration_id) FROM requests WHERE duplicate = 0 "
                       "AND state IN ('OK', 'FAILED', 'TIMEOUT', 'INVALID')")[0][0]
    assert unique == 40 and res[0]["evaluations"] == 40               # test_limit held for the run
    assert sum(r["calls"] for r in res) == 40                         # the objective ran 40 times in all
    assert _rows(db, "SELECT COUNT(*) FROM requests WHERE state IN ('WAITING', 'RUNNING')")[0][0] == 0
    assert all(r["measured_here"] > 0 for r in res)
    best_db = _rows(db, "SELECT MIN(value) FROM results WHERE state = 'OK'")[0][0]
    assert res[0]["best_value"] == pytest.approx(best_db)


@pytest.mark.mpi
@pytest.mark.slow
def test_mpirun_run_has_seed_files_results_log_and_a_final_status(tmp_path: Path) -> None:
    """Regression (issue 11): under mpirun the run goes through the same session as without MPI.

    A ``--seed-configuration`` file is measured first, ``--results-log`` gets one
    line per finished trial, and the run's status ends as "finished" (it stayed
    "created" when MPI set up its runs by itself).
    """
    _need_mpi()
    db, out = tmp_path / "seeded.db", tmp_path / "out.json"
    seed_file, log_file = tmp_path / "seed.json", tmp_path / "log.jsonl"
    seed_file.write_text(json.dumps({"x": 2, "y": 13}))
    proc = _launch(db, out, "--via-main", "--limit", "20", "--seed-file", str(seed_file),
                   "--log-file", str(log_file), n=2)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    first = _rows(db, "SELECT c.data_json, q.technique FROM requests q JOIN configurations c "
                      "ON c.id = q.configuration_id ORDER BY q.id LIMIT 1")[0]
    assert json.loads(first[0]) == {"x": 2, "y": 13} and first[1] == "seed"
    assert _rows(db, "SELECT status FROM runs") == [("finished",)]
    lines = [json.loads(line) for line in log_file.read_text().splitlines()]
    measured = _rows(db, "SELECT COUNT(*) FROM requests WHERE state NOT IN ('WAITING', 'RUNNING')")[0][0]
    assert len(lines) == measured >= 20
    assert lines[0]["config"] == {"x": 2, "y": 13}


@pytest.mark.mpi
@pytest.mark.slow
def test_app_main_under_mpirun_prints_once(tmp_path: Path) -> None:
    """The user's path: ``mpirun -n 3 python myapp.py --test-limit ...`` (TunerApp.main)."""
    _need_mpi()
    db = tmp_path / "main.db"
    proc = _launch(db, tmp_path / "unused.json", "--limit", "30", "--via-main")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    workers = {w.rsplit(":", 1)[-1] for (w,) in _rows(
        db, "SELECT DISTINCT worker FROM requests WHERE state = 'OK' AND duplicate = 0")}
    assert workers == {"rank0", "rank1", "rank2"}
    assert all(n == 1 for _, n in _measured_per_config(db))
    best_db = _rows(db, "SELECT MIN(value) FROM results WHERE state = 'OK'")[0][0]
    printed = [line for line in proc.stdout.splitlines() if line.strip()]
    assert printed and any(f"{best_db:g}" in line for line in printed)   # rank 0 printed the best
    assert len(_rows(db, "SELECT id FROM runs")) == 1


@pytest.mark.mpi
@pytest.mark.server_db
@pytest.mark.parametrize("mode", ["central", "per-rank"])
def test_three_ranks_share_one_postgresql_run(tmp_path: Path, mode: str) -> None:
    """Across nodes the ranks share a PostgreSQL database; same guarantees as SQLite."""
    url = os.environ.get("TEST_DB_URL")
    if not url:
        pytest.skip("TEST_DB_URL is not set (a PostgreSQL URL; .ci/run starts one)")
    _need_mpi()
    import uuid

    import sqlalchemy as sa

    name = f"mpi-pg-{uuid.uuid4().hex[:10]}"
    proc = _launch(url, tmp_path / "out.json", "--limit", "30", "--run-name", name, "--side", "8", mode=mode)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    res = json.loads((tmp_path / "out.json").read_text())
    engine = sa.create_engine(url)
    try:
        with engine.connect() as con:
            run_id = con.execute(sa.text("SELECT id FROM runs WHERE name = :n"), {"n": name}).scalar_one()
            per_config = con.execute(sa.text(
                "SELECT q.configuration_id, COUNT(*) FROM results r JOIN requests q ON q.id = r.request_id "
                "WHERE q.run_id = :r AND NOT q.duplicate GROUP BY q.configuration_id"), {"r": run_id}).all()
            workers = {w.rsplit(":", 1)[-1] for (w,) in con.execute(sa.text(
                "SELECT DISTINCT worker FROM requests WHERE run_id = :r AND state = 'OK' AND NOT duplicate"),
                {"r": run_id})}
            best = con.execute(sa.text("SELECT MIN(value) FROM results WHERE run_id = :r AND state = 'OK'"),
                               {"r": run_id}).scalar_one()
    finally:
        engine.dispose()
    assert workers == {"rank0", "rank1", "rank2"}
    assert per_config and all(n == 1 for _, n in per_config)
    assert res[0]["best_value"] == pytest.approx(best)
    if mode == "per-rank":
        assert len(per_config) == 30 == sum(r["calls"] for r in res)   # the shared test_limit


def _main(argv: list[str]) -> None:
    import argparse

    from ensemble import Integer, SearchSpace, TunerApp
    from ensemble.driver import run_app
    from ensemble.mpi import comm_world, detect
    from ensemble.settings import RunSettings

    ap = argparse.ArgumentParser()
    ap.add_argument("db")
    ap.add_argument("out")
    ap.add_argument("--limit", type=int, default=45)
    ap.add_argument("--resume", action="store_true")
    ap.add_argument("--kill-rank", type=int, default=-1)
    ap.add_argument("--kill-after", type=int, default=0)
    ap.add_argument("--sleep", type=float, default=0.02)
    ap.add_argument("--island-log", action="store_true")
    ap.add_argument("--via-main", action="store_true")
    ap.add_argument("--run-name", default="mpi-test")
    ap.add_argument("--side", type=int, default=16)        # the space is side x side points
    ap.add_argument("--technique", default="IslandGA")
    ap.add_argument("--seed-file")
    ap.add_argument("--log-file")
    ap.add_argument("--parallelism", type=int, default=1)
    ns = ap.parse_args(argv)
    info = detect()
    rank = info.rank if info else 0

    class Bowl(TunerApp):
        measured = 0

        def space(self) -> SearchSpace:
            return SearchSpace().add(Integer("x", 0, ns.side - 1), Integer("y", 0, ns.side - 1))

        def run(self, config: dict, limit: float | None) -> float:
            Bowl.measured += 1
            if rank == ns.kill_rank and Bowl.measured > ns.kill_after:
                os.kill(os.getpid(), signal.SIGKILL)
            time.sleep(ns.sleep)
            return float((config["x"] - 11) ** 2 + (config["y"] - 4) ** 2 + 1)

    if ns.via_main:
        extra = []
        if ns.seed_file:
            extra += ["--seed-configuration", ns.seed_file]
        if ns.log_file:
            extra += ["--results-log", ns.log_file]
        status = Bowl.main(["--database", f"sqlite:///{ns.db}", "--run-name", "via-main", "--technique",
                            "IslandGA", "--test-limit", str(ns.limit), "--seed", "5", "--quiet", *extra])
        raise SystemExit(status)
    url = ns.db if "://" in ns.db else f"sqlite:///{ns.db}"
    settings = RunSettings(technique=ns.technique, database=url, run_name=ns.run_name,
                           test_limit=ns.limit, seed=5, resume=ns.resume, quiet=True, parallelism=ns.parallelism)
    technique = None
    if ns.island_log:
        from ensemble.registry import create_technique

        technique = create_technique("IslandGA", seed=5 + rank, population=6, migration_interval=1)
    result = run_app(Bowl(), settings, app_ref="tests.ensemble.test_mpi_run:Bowl", technique=technique)
    mine = {"rank": rank, "run_name": result.run_name, "best_value": result.best_value,
            "evaluations": result.evaluations, "reclaimed": result.extra["reclaimed"],
            "measured_here": result.extra["measured_here"], "measured_total": result.extra["measured_total"],
            "calls": Bowl.measured}
    if technique is not None:
        mine["received_from"] = sorted({e["from"] for e in technique.migrations if e["event"] == "received"})
    everything = comm_world().gather(mine, root=0)
    if rank == 0:
        Path(ns.out).write_text(json.dumps(everything))


if __name__ == "__main__":
    _main(sys.argv[1:])
