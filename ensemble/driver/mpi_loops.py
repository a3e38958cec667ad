"""MPI loops: every rank of ``mpirun -n N python app.py`` measures, through the same run session.

Why here and not in ``ensemble.mpi``: that module is MPI plumbing (rank
detection, device binding, broadcasting the run, the migration ring); how a
run is set up, ended and summarised is the
:class:`~ensemble.driver.session.RunSession`'s job, the same as without MPI.
Two modes (``ENSEMBLE_MPI_SEARCH``, docs/MPI.md):

* ``central`` (default): rank 0 runs the one search driver (and measures in a
  thread); every other rank claims requests from the database;
* ``per-rank``: every rank runs its own search driver (technique seeded with
  seed + rank) and measures its own requests; the drivers share the run
  through ``Storage.submit``, so a configuration is measured once and
  ``--test-limit`` counts every rank's evaluations.

Rank 0 opens the run, queues the seed configurations, writes the results log,
sets the run's status and writes the report.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from typing import TYPE_CHECKING, Any

# imported by every rank before rank 0 opens the run: imported lazily after it, the other
# ranks spent seconds importing SQLAlchemy while rank 0 measured alone
import ensemble.storage  # noqa: F401
from ensemble import mpi
from ensemble.driver.measure import MeasurementDriver
from ensemble.driver.runinfo import RunHandle, TuneResult

if TYPE_CHECKING:  # pragma: no cover
    from ensemble.driver.search import SearchDriver
    from ensemble.driver.session import RunSession
    from ensemble.storage.base import BaseStorage

__all__ = ["run_mpi"]


def run_mpi(session: RunSession, info: mpi.MPIInfo, *, mode: str | None = None) -> TuneResult:
    """Tune with every MPI rank measuring; returns the TuneResult on every rank.

    ``result.extra`` carries ``rank``, ``size``, ``mode``, ``reclaimed``,
    ``measured_here`` and ``measured_total``; callers print and write on rank 0 only.
    """
    comm = mpi.comm_world()
    mode = mode or mpi.search_mode()
    rank, size = info.rank, info.size
    settings = session.settings
    session.prepare()                       # every rank: bad input fails everywhere before any write
    session.check_processes(mpi_size=size)
    try:
        # Only rank 0 touches the database until the run exists: N processes creating
        # one SQLite file and switching it to WAL at the same moment trip over its lock.
        handle = RunHandle.from_json(mpi.share_run(comm, lambda: session.open(reclaim_all=True).to_json()))
        if rank != 0:
            session.attach(handle)
        storage = session.storage
        assert storage is not None
        hb = max(0.5, settings.heartbeat_timeout / 4)
        measurers = _measurers(session, info, storage, handle.run_id, hb, mode)
        measure = measurers[0]
        search: SearchDriver | None = None
        if rank == 0 or mode == "per-rank":
            seed = settings.seed + rank if (mode == "per-rank" and settings.seed is not None) else None
            # central: keep a queue for every measuring thread of every rank (at least 2, so a lone
            # rank never waits for the search between trials); per-rank: one request at a time
            search = session.start_search(workers=max(2, size * len(measurers)) if mode == "central" else 1,
                                          shared=mode == "per-rank", seed=seed,
                                          queue_seeds=rank == 0, log_trials=rank == 0)
        try:
            if search is None:
                _serve_all(measurers, storage, handle.run_id)
            elif mode == "central":
                _central(search, measurers, storage, handle.run_id)
            else:
                _per_rank(search, measure)
        finally:
            if search is not None:
                search.finish()             # withdraw this rank's unclaimed queue
            mpi.polite_barrier(comm)        # every rank has committed its last result
            if mode == "per-rank":
                # Island migrants still in flight would make MPICH abort at finalisation:
                # every send was posted before the barrier, so receive and drop them now.
                mpi.MPIRing(comm).poll(rank)
                mpi.polite_barrier(comm)
        summary: dict[str, Any] | None = None
        if rank == 0:
            assert search is not None
            search.collect()                # results of other ranks for the log and the technique
            session.end_search(finished=search.done)
            result = session.summary(stop_reason=search.status.stop_reason)
            session.write_report(result)
            summary = dataclasses.asdict(result)
            summary["extra"] = {"measured_total": int(storage.counts(handle.run_id).get("measured", 0))}
        else:
            session.close_log()
        summary = json.loads(comm.bcast(json.dumps(summary), root=0))
        assert summary is not None
        extra = {"rank": rank, "size": size, "mode": mode, "reclaimed": handle.reclaimed,
                 "measured_here": sum(m.measured for m in measurers), **summary.pop("extra")}
        summary["report_dir"] = summary["report_dir"] if rank == 0 else None
        return TuneResult(**summary, extra=extra)
    finally:
        session.close()


def _measurers(session: RunSession, info: mpi.MPIInfo, storage: BaseStorage, run_id: int, hb: float,
               mode: str) -> list[MeasurementDriver]:
    """This rank's measurement drivers: ``--parallelism`` of them in central mode, else one.

    Why several per rank: an app that compiles (nvcc, an OpenCL build, an HLS
    flow) spends most of a trial on the CPU; with one driver a rank compiled
    one kernel at a time while its cores idled, so ``mpirun -n 2`` compiled
    two at a time where one process with ``--parallelism 16`` compiled
    sixteen.  As in the threads loop of one process, an app with a compile
    step gets one measuring lock per rank, so its launches still run one at a
    time on the rank's device while the compiles overlap.
    """
    n = max(1, session.settings.parallelism) if mode == "central" else 1
    lock = threading.Lock() if n > 1 and getattr(session.app, "has_compile", False) else None
    name = mpi.worker_name(info)
    return [MeasurementDriver(storage, run_id, session.app, session.objective,
                              worker=name if i == 0 else f"{name}.{i}", heartbeat_interval=hb, measure_lock=lock)
            for i in range(n)]


def _serve_all(measurers: list[MeasurementDriver], storage: BaseStorage, run_id: int,
               stop: threading.Event | None = None) -> None:
    """Measure with every driver (one thread each beyond the first) until the search says done."""
    threads = [threading.Thread(target=_serve_until_done, args=(m, storage, run_id, stop),
                                name=f"ensemble-mpi-worker-{i}", daemon=True)
               for i, m in enumerate(measurers[1:], start=1)]
    for th in threads:
        th.start()
    try:
        _serve_until_done(measurers[0], storage, run_id, stop)
    finally:
        for th in threads:
            th.join()


def _central(search: SearchDriver, measurers: list[MeasurementDriver], storage: BaseStorage, run_id: int) -> None:
    """Rank 0: the search loop, with this rank's workers in threads."""
    stop = threading.Event()
    th = threading.Thread(target=_serve_all, args=(measurers, storage, run_id, stop),
                          name="ensemble-mpi-rank0-worker", daemon=True)
    th.start()
    try:
        pause = 0.001
        while True:
            seen = search.step()
            if search.done:
                break
            # back off while nothing finishes: rank 0 also measures in a thread
            pause = 0.001 if seen else min(0.02, pause * 2)
            time.sleep(pause)
    finally:
        search.finish()
        stop.set()
        th.join()


def _per_rank(search: SearchDriver, measure: MeasurementDriver) -> None:
    """Every rank: its own search, measuring its own requests (and others' once the budget is spent)."""
    pause = 0.002
    while True:
        seen = search.step()
        if search.done:
            break
        if measure.work_one():
            pause = 0.002
            continue
        # nothing to claim: back off while nothing finishes (ranks may outnumber cores)
        pause = 0.002 if seen else min(0.01, pause * 2)
        time.sleep(pause)
    if search.budget_spent:
        # The run's test_limit is all requested: measure the other ranks' queued requests
        # instead of waiting at the barrier with them still WAITING (no new ones can come).
        while measure.work_one():
            pass


def _serve_until_done(drv: MeasurementDriver, storage: BaseStorage, run_id: int,
                      stop: threading.Event | None = None) -> None:
    """Measure until the search says done; never picks up work after that."""
    pause = 0.002
    while stop is None or not stop.is_set():
        state = storage.get_state(run_id, "search")
        if state and state.get("done"):
            return
        if drv.work_one():
            pause = 0.002
            continue
        time.sleep(pause)
        pause = min(0.01, pause * 2)
