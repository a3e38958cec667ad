"""End-to-end recovery and stopping: a worker that dies mid-trial, and ``stop_after``.

Why these tests exist: the promise of the design (docs/RUNNING.md, "How a run
works" and "Crash safety"; ../shared/DESIGN.md, request states) is that a
measurement worker may die at any moment without losing or doubling a
measurement: its RUNNING request goes back to WAITING once its heartbeat is
older than ``--heartbeat-timeout``, another worker measures it, a late result
of the old worker is refused, and the run still reaches its budget. The unit
tests of ``Storage`` check each statement on its own; here real
``ensemble-tuner`` processes (one search, attached workers) share one SQLite
file and one worker is SIGKILLed (or SIGSTOPped) while its app's ``run()`` is
in progress. The second part checks the wall-clock stop rule of the core
driver (not the replay app's simulated clock): a run whose test limit cannot
be reached ends by itself, leaving no request in flight.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from ensemble import Result
from ensemble.driver.local import run_app
from ensemble.settings import RunSettings
from ensemble.storage import Storage
from tests.ensemble.driver_helpers import BigQuadApp, QuadApp, TinyRandom, db_url

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
APP_REF = "tests.ensemble.test_driver_recovery:HangOnceApp"

#: the smallest settings that keep the test fast and still safe on a loaded 2-core machine:
#: the search driver looks for stale requests every max(1 s, timeout / 4) (SearchDriver._maybe_requeue)
HEARTBEAT_TIMEOUT = 1.0
#: attached workers beat every interval / 2 while a trial runs (driver.measure._Heartbeat)
WORKER_HEARTBEAT = 0.2
TEST_LIMIT = 12
#: a sentinel no QuadApp configuration produces ((x-7)^2 + (y-3)^2 + 1 is never negative)
LATE_VALUE = -12345.0


class HangOnceApp(BigQuadApp):
    """BigQuadApp whose ``run()`` blocks in the process that has ENSEMBLE_TEST_HANG_FLAG set.

    On its first trial it writes the flag file (config + pid) so the test knows
    the request is claimed and ``run()`` is in progress, then waits until the
    file ENSEMBLE_TEST_HANG_RELEASE exists (never, for the killed worker) and
    returns LATE_VALUE, a value the objective cannot produce, so a late result
    that slipped into the database would be visible. Other processes (the
    healthy worker) measure normally and log each trial (QuadApp).
    """

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        flag = os.environ.get("ENSEMBLE_TEST_HANG_FLAG")
        if flag and not os.path.exists(flag):
            tmp = flag + ".tmp"
            with open(tmp, "w", encoding="utf-8") as fh:
                json.dump({"config": config, "pid": os.getpid()}, fh)
            os.replace(tmp, flag)  # atomic: the test never reads a half-written flag
            release = os.environ.get("ENSEMBLE_TEST_HANG_RELEASE", "")
            deadline = time.monotonic() + 120
            while not (release and os.path.exists(release)) and time.monotonic() < deadline:
                time.sleep(0.05)
            return Result(time=LATE_VALUE)
        return super().run(config, limit)


def _wait_for(predicate, timeout: float, what: str, procs: list[subprocess.Popen] = ()) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        for p in procs:
            if p.poll() is not None:
                _, err = p.communicate()
                raise AssertionError(f"{what}: process {p.args[3:5]} exited ({p.returncode}) early:\n{err}")
        time.sleep(0.05)
    raise AssertionError(f"timed out after {timeout} s waiting for {what}")


def _row(url: str, run_name: str, request_id: int):
    st = Storage(url)
    try:
        run = st.get_run(run_name)
        return next(r for r in st.trials(run.id) if r.request_id == request_id)
    finally:
        st.close()


def _freeze(proc: subprocess.Popen, db_path: str) -> None:
    """SIGSTOP ``proc`` at a moment when it holds no SQLite write lock.

    Why: its heartbeat thread writes every 0.1 s; frozen inside that
    transaction it would block every other writer for the whole busy timeout,
    which is not the failure under test. The stop is retried until a write
    transaction from here succeeds (a stopped process cannot take the lock later).
    """
    for _ in range(100):
        proc.send_signal(signal.SIGSTOP)
        db = sqlite3.connect(db_path, timeout=0.5, isolation_level=None)
        try:
            db.execute("BEGIN IMMEDIATE")
            db.execute("ROLLBACK")
            return
        except sqlite3.OperationalError:
            proc.send_signal(signal.SIGCONT)
            time.sleep(0.02)
        finally:
            db.close()
    raise AssertionError("could not stop the victim outside a database transaction")


def _stop_all(procs: list[subprocess.Popen]) -> None:
    """Kill every child this test started that is still alive (each by its own pid)."""
    for p in procs:
        if p.poll() is None:
            try:
                os.kill(p.pid, signal.SIGCONT)  # a stopped process must run to die cleanly
            except ProcessLookupError:
                pass
            p.kill()
    for p in procs:
        try:
            p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()  # still not gone: cleanup goes on for the others


def _run_with_lost_worker(tmp_path: Path, mode: str) -> dict[str, Any]:
    """One search process (--parallelism 0), a victim worker stuck in run(), then a healthy worker.

    mode "kill": the victim is SIGKILLed while its request is RUNNING.
    mode "stop": the victim is SIGSTOPped, and SIGCONTed (its run() then returns
    LATE_VALUE) only after the run is over, the same request committed by the healthy worker.
    Returns what the assertions need; every process is gone when it returns.
    """
    url = db_url(tmp_path, "recovery.db")
    name = f"recovery-{mode}-{uuid.uuid4().hex[:6]}"
    log = tmp_path / "measured.log"
    flag, release = tmp_path / "hang.flag", tmp_path / "hang.release"
    env = dict(os.environ, PYTHONPATH=ROOT, ENSEMBLE_TEST_MEASURE_LOG=str(log))
    victim_env = dict(env, ENSEMBLE_TEST_HANG_FLAG=str(flag), ENSEMBLE_TEST_HANG_RELEASE=str(release))
    base = [sys.executable, "-m", "ensemble.cli"]

    def worker(tag: str, wenv: dict[str, str]) -> subprocess.Popen:
        return subprocess.Popen(base + ["worker", "--database", url, "--run", name, "--wait", "120",
                                        "--name", tag, "--heartbeat", str(WORKER_HEARTBEAT)],
                                cwd=ROOT, env=wenv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    procs: list[subprocess.Popen] = []
    try:
        # no --quiet: the search process logs its requeue as a warning on stderr
        search = subprocess.Popen(
            base + ["run", APP_REF, "--database", url, "--run-name", name,
                    "--technique", "tests.ensemble.driver_helpers:TinyRandom", "--parallelism", "0",
                    "--test-limit", str(TEST_LIMIT), "--seed", "5",
                    "--heartbeat-timeout", str(HEARTBEAT_TIMEOUT)],
            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        procs.append(search)
        victim = worker("victim", victim_env)
        procs.append(victim)

        held = json.loads(_wait_for(lambda: flag.exists() and flag.read_text(), 120,
                                    "the victim to start a trial", [search, victim]))
        assert held["pid"] == victim.pid
        st = Storage(url)
        run = st.get_run(name)
        running = [r for r in st.trials(run.id) if r.state == "RUNNING"]
        st.close()
        # the search keeps one request in flight for one worker: the victim holds it
        assert len(running) == 1 and running[0].config == held["config"], running
        victim_rid, victim_worker = running[0].request_id, running[0].worker
        assert victim_worker.endswith(f":{victim.pid}:victim")

        # alive and beating: a trial longer than the heartbeat timeout is NOT taken away
        time.sleep(2 * HEARTBEAT_TIMEOUT + 0.5)
        still = _row(url, name, victim_rid)
        assert (still.state, still.worker) == ("RUNNING", victim_worker)

        if mode == "kill":
            victim.send_signal(signal.SIGKILL)
            victim.wait(timeout=30)
        else:
            _freeze(victim, url[len("sqlite:///"):])
        healthy = worker("healthy", env)
        procs.append(healthy)

        _, search_err = search.communicate(timeout=180)
        assert search.returncode == 0, search_err
        _, healthy_err = healthy.communicate(timeout=60)
        assert healthy.returncode == 0, healthy_err
        if mode == "stop":
            # the run is over and the victim's request was committed by the healthy worker:
            # only now let the victim's run() return, so its commit can only be late
            assert _row(url, name, victim_rid).worker.endswith(":healthy")
            release.write_text("go")
            victim.send_signal(signal.SIGCONT)
        _, victim_err = victim.communicate(timeout=60)
    finally:
        _stop_all(procs)
    return {"url": url, "name": name, "log": log, "victim": victim, "victim_err": victim_err,
            "search_err": search_err, "victim_rid": victim_rid, "victim_worker": victim_worker, "held": held}


def _check_recovered_run(out: dict[str, Any]) -> None:
    """What both variants must leave in the database: the lost request measured once, by someone else."""
    url, name, rid = out["url"], out["name"], out["victim_rid"]
    st = Storage(url)
    try:
        run = st.get_run(name)
        counts = st.counts(run.id)
        rows = st.trials(run.id)
        assert counts["WAITING"] == 0 and counts["RUNNING"] == 0, counts
        measured = [r for r in rows if not r.duplicate]
        assert counts["unique"] == TEST_LIMIT == len(measured)
        assert all(r.state == "OK" for r in measured)
        assert len({r.config_hash for r in measured}) == TEST_LIMIT   # no configuration measured twice

        lost = next(r for r in rows if r.request_id == rid)
        assert lost.state == "OK" and lost.worker.endswith(":healthy"), lost
        assert lost.config == out["held"]["config"]
        expected = float((lost.config["x"] - 7) ** 2 + (lost.config["y"] - 3) ** 2 + 1)
        assert lost.value == expected and lost.metrics.get("time") == expected
        # every measured request was committed by the healthy worker; nothing by the victim
        assert {r.worker.rsplit(":", 1)[-1] for r in measured} == {"healthy"}
        assert all(r.value != LATE_VALUE for r in rows)
        # the victim's own late commit (as it would arrive) is refused and changes nothing
        assert st.heartbeat([rid], out["victim_worker"]) == 0
        assert st.finish(rid, out["victim_worker"], state="OK", value=LATE_VALUE,
                         metrics={"time": LATE_VALUE}) is False
        again = next(r for r in st.trials(run.id) if r.request_id == rid)
        assert (again.state, again.worker, again.value) == ("OK", lost.worker, expected)
        assert st.get_state(run.id, "search")["done"] is True
    finally:
        st.close()
    # exactly one result row per request, one for the lost request in particular
    db = sqlite3.connect(url[len("sqlite:///"):])
    try:
        per_request = dict(db.execute("SELECT request_id, COUNT(*) FROM results GROUP BY request_id").fetchall())
    finally:
        db.close()
    assert per_request[rid] == 1 and set(per_request.values()) == {1}
    # the measurement log: each configuration run to completion once, the lost one among them
    lines = Counter(out["log"].read_text().splitlines())
    assert sum(lines.values()) == TEST_LIMIT and max(lines.values()) == 1
    held = out["held"]["config"]
    assert lines[f"{held['x']},{held['y']}"] == 1
    # the search driver (the only code that requeues during a run) says it did
    assert "requeued 1 request(s)" in out["search_err"]


@pytest.mark.slow
def test_sigkilled_worker_request_is_requeued_and_measured_by_another_worker(tmp_path):
    """A worker SIGKILLed while its app's run() is in progress loses nothing and doubles nothing.

    Why: kill -9 (OOM killer, a lost node) is the failure the heartbeat exists
    for. The request stays RUNNING while the victim is alive and beating (even
    past the heartbeat timeout), goes back to WAITING once the beats stop, is
    measured by the attached healthy worker, and the run reaches its test
    limit with no request left RUNNING/WAITING and every configuration measured
    exactly once.
    """
    out = _run_with_lost_worker(tmp_path, "kill")
    assert out["victim"].returncode == -signal.SIGKILL
    _check_recovered_run(out)


@pytest.mark.slow
def test_frozen_worker_late_result_is_refused_after_its_request_was_requeued(tmp_path):
    """A worker frozen mid-trial (SIGSTOP) whose request was given away cannot commit its late result.

    Why: a worker that is only slow (swapping, a paused VM, a network
    partition) looks dead to the search and its request is measured again
    elsewhere; when it wakes up, MeasurementDriver._commit must be refused
    (Storage.finish returns False) so the request keeps the one result of the
    worker that measured it, and the woken worker goes on and exits cleanly.
    """
    out = _run_with_lost_worker(tmp_path, "stop")
    assert out["victim"].returncode == 0, out["victim_err"]
    assert "result dropped" in out["victim_err"]     # MeasurementDriver._commit's warning
    _check_recovered_run(out)


# -- stop_after in the core driver -------------------------------------------------------------------


class SleepyQuadApp(QuadApp):
    """QuadApp whose trials sleep 0.05 s; records every configuration it measured (thread-safe)."""

    def __init__(self, args: Any = None) -> None:
        super().__init__(args, hi=1000)
        self.measured: list[dict[str, Any]] = []
        self._lock = threading.Lock()

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        time.sleep(0.05)
        with self._lock:
            self.measured.append(dict(config))
        return super().run(config, limit)


def test_stop_after_ends_a_run_whose_test_limit_cannot_be_reached(tmp_path):
    """``stop_after`` (wall-clock seconds) stops the core driver by itself, with nothing in flight.

    Why: ``--stop-after`` is the stop rule users rely on for runs with a large
    or no test limit; it must end the run (here the default: one worker in the
    search thread), keep every result it measured, report the same count as
    the database, and leave no request WAITING or RUNNING in a run marked
    finished (docs/REPORTS.md: those states mean "a run still in progress").
    Bounds are generous: the machine running the suite may be busy.
    """
    limit = 100_000
    app = SleepyQuadApp()
    url = db_url(tmp_path)
    t0 = time.monotonic()
    res = run_app(app, RunSettings(database=url, run_name="stop", test_limit=limit, stop_after=1.0,
                                   seed=2, quiet=True),
                  technique=TinyRandom(seed=2))
    elapsed = time.monotonic() - t0
    assert elapsed < 30
    assert res.stop_reason is not None and "time limit" in res.stop_reason
    assert 3 <= res.evaluations < limit
    st = Storage(url)
    try:
        run = st.get_run("stop")
        counts = st.counts(run.id)
        rows = st.trials(run.id)
        assert run.status == "finished"
    finally:
        st.close()
    assert counts["WAITING"] == 0 and counts["RUNNING"] == 0, counts
    measured = [r for r in rows if not r.duplicate]
    assert all(r.state == "OK" for r in measured)
    # every trial the app ran is committed, once, and the result the driver returns agrees with the database
    assert sorted(json.dumps(c, sort_keys=True) for c in app.measured) == sorted(
        json.dumps(r.config, sort_keys=True) for r in measured)
    assert res.evaluations == counts["unique"] == len(measured)


class LongTrialApp(QuadApp):
    """Every trial sleeps 2.5 s: longer than the 1 s stop_after, so the stop always comes mid-trial."""

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        time.sleep(2.5)
        return super().run(config, limit)


def test_stop_after_with_worker_threads_leaves_no_request_waiting(tmp_path):
    """A run stopped by ``stop_after`` with two worker threads must not leave queued requests behind.

    Why: the same-thread loop takes care to measure what it claimed ahead
    ("requests claimed ahead are measured, not left RUNNING"), and
    docs/REPORTS.md reads WAITING/RUNNING as "a run still in progress"; a
    finished run with a WAITING request shows a phantom pending trial in
    trials.csv, and an ``ensemble-tuner worker`` attached later to the run
    would still claim and measure it after the search is over. Deterministic:
    both threads are inside a 2.5 s trial when the 1 s limit passes, with the
    third request (2 workers + 1) queued.
    """
    url = db_url(tmp_path)
    t0 = time.monotonic()
    res = run_app(LongTrialApp(hi=1000), RunSettings(database=url, run_name="stop2", test_limit=100_000,
                                                     stop_after=1.0, parallelism=2, seed=2, quiet=True),
                  technique=TinyRandom(seed=2))
    assert time.monotonic() - t0 < 30
    assert "time limit" in res.stop_reason
    st = Storage(url)
    try:
        run = st.get_run("stop2")
        counts = st.counts(run.id)
        assert run.status == "finished"
    finally:
        st.close()
    assert counts["RUNNING"] == 0                      # the threads finish the trial they hold
    assert res.evaluations == counts["unique"] == 2    # both are committed and counted
    assert counts["WAITING"] == 0, counts              # the queued third request was withdrawn
