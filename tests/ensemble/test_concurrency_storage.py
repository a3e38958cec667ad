"""Many processes on one database: every request claimed and finished exactly once, nothing lost.

Runs on a SQLite file always and on PostgreSQL when TEST_DB_URL is set.
Workers are separate processes (spawned, so no state is inherited) that share
nothing but the database, as measurement workers do.
"""

from __future__ import annotations

import collections
import multiprocessing as mp
import os
import queue
import time
import uuid

import pytest
import sqlalchemy as sa

from ensemble.storage import NewRequest, Storage
from tests.ensemble.storage import workers

SPAWN = mp.get_context("spawn")
N_WORKERS = 4
PER_WORKER = 1000
BARRIER_S = 120.0  # a worker that died before the barrier must not leave the others waiting for ever


@pytest.fixture(params=["sqlite", pytest.param("postgresql", marks=pytest.mark.server_db)])
def url(request, tmp_path):
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'shared.db'}"
        return
    base = os.environ.get("TEST_DB_URL")
    if not base:
        pytest.skip("PostgreSQL tests need TEST_DB_URL=postgresql+psycopg2://user@host:port/db")
    schema = "c_" + uuid.uuid4().hex[:12]
    admin = sa.create_engine(base)
    with admin.begin() as conn:
        conn.execute(sa.text(f"CREATE SCHEMA {schema}"))
    yield sa.make_url(base).update_query_dict({"options": f"-csearch_path={schema}"}).render_as_string(False)
    with admin.begin() as conn:
        conn.execute(sa.text(f"DROP SCHEMA {schema} CASCADE"))
    admin.dispose()


def _collect(out, procs, n, timeout=600.0):
    """n reports from the worker processes; fails at once (not after the timeout) if one of them died."""
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < n:
        try:
            got.append(out.get(timeout=0.5))
        except queue.Empty:
            dead = [p.exitcode for p in procs if p.exitcode not in (None, 0)]
            assert not dead, f"worker process(es) failed with exit code(s) {dead} (see their stderr above)"
            assert time.monotonic() < deadline, f"workers sent {len(got)} of {n} reports in {timeout} s"
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0, f"worker process exited with {p.exitcode}"
    return got


@pytest.mark.parametrize("per_worker", [100, pytest.param(PER_WORKER, marks=pytest.mark.slow)])
def test_workers_finish_every_request_exactly_once(url, per_worker):
    s = Storage(url)
    run_id = s.create_run("conc", app="demo", space_json="{}", space_hash="h")
    total = N_WORKERS * per_worker
    ids = s.add_requests(run_id, [NewRequest(f'{{"x":{i}}}', f"h{i}", "Random") for i in range(total)])
    start, out = SPAWN.Barrier(N_WORKERS, timeout=BARRIER_S), SPAWN.Queue()
    procs = [SPAWN.Process(target=workers.drain, args=(url, run_id, f"w{k}", k + 1, start, out))
             for k in range(N_WORKERS)]  # batch sizes 1..4: single and multi-row claims
    for p in procs:
        p.start()
    reports = dict(_collect(out, procs, N_WORKERS))

    finished_by = collections.Counter(rid for done in reports.values() for rid in done)
    assert sorted(finished_by) == sorted(ids)                      # nothing lost
    assert set(finished_by.values()) == {1}                        # nothing measured twice
    assert sum(1 for done in reports.values() if done) >= 2        # really concurrent

    rows = s.trials(run_id)
    assert len(rows) == total and len({r.request_id for r in rows}) == total
    assert all(r.state == "OK" for r in rows)
    assert all(r.value == 2.0 * r.config["x"] for r in rows)       # each result belongs to its request
    assert all(r.metrics["worker"] == r.worker for r in rows)      # recorded by the worker that claimed it
    with s._db.begin(write=False) as conn:
        n_results, n_distinct = conn.execute(
            sa.text("SELECT count(*), count(DISTINCT request_id) FROM results WHERE run_id = :r"), {"r": run_id}
        ).one()
    assert (n_results, n_distinct) == (total, total)               # no duplicated result rows
    counts = s.counts(run_id)
    assert (counts["OK"], counts["WAITING"], counts["RUNNING"], counts["unique"]) == (total, 0, 0, total)


def test_sigkill_after_n_finishes_keeps_all_n(url):
    s = Storage(url)
    run_id = s.create_run("crash", app="demo", space_json="{}", space_hash="h")
    s.add_requests(run_id, [NewRequest(f'{{"x":{i}}}', f"h{i}", "Random") for i in range(40)])
    proc = SPAWN.Process(target=workers.finish_then_die, args=(url, run_id, 25))
    proc.start()
    proc.join(timeout=120)
    assert proc.exitcode == -9
    after = Storage(url)
    done = after.finished_since(run_id, 0)
    assert [t.value for t in done] == [float(i) for i in range(25)]
    counts = after.counts(run_id)
    assert (counts["OK"], counts["RUNNING"], counts["WAITING"]) == (25, 1, 14)
    assert after.requeue_stale(run_id, 0.0) == 1                   # the one in flight goes back
    assert after.counts(run_id)["WAITING"] == 15


def test_run_creation_race_has_one_winner(url):
    Storage(url).close()  # the schema exists; the race is about the run row
    n = 2
    start, out = SPAWN.Barrier(n, timeout=BARRIER_S), SPAWN.Queue()
    procs = [SPAWN.Process(target=workers.create_same_run, args=(url, start, out)) for _ in range(n)]
    for p in procs:
        p.start()
    got = _collect(out, procs, n)
    runs = Storage(url).list_runs()
    assert len(runs) == 1 and got == [runs[0].id] * n


def test_fresh_database_creation_race(tmp_path):
    """Several processes opening the same new SQLite file at once: one creates it, all can use it."""
    url = f"sqlite:///{tmp_path / 'new.db'}"
    n = 2
    start, out = SPAWN.Barrier(n, timeout=BARRIER_S), SPAWN.Queue()
    procs = [SPAWN.Process(target=workers.create_same_run, args=(url, start, out)) for _ in range(n)]
    for p in procs:
        p.start()
    got = _collect(out, procs, n)
    assert len(set(got)) == 1 and len(got) == n


def test_concurrent_submitters_share_configurations(url):
    """Two search drivers submitting overlapping configurations in different orders (MPI islands)."""
    s = Storage(url)
    run_id = s.create_run("subm", app="demo", space_json="{}", space_hash="h")
    start, out = SPAWN.Barrier(2, timeout=BARRIER_S), SPAWN.Queue()
    procs = [SPAWN.Process(target=workers.add_overlapping, args=(url, run_id, seed, start, out)) for seed in (1, 2)]
    for p in procs:
        p.start()
    got = _collect(out, procs, 2)
    assert sorted(got[0] + got[1]) == sorted({*got[0], *got[1]}) and len(got[0]) == len(got[1]) == 200
    with s._db.begin(write=False) as conn:
        n_configs = conn.execute(sa.text("SELECT count(*) FROM configurations WHERE run_id = :r"),
                                 {"r": run_id}).scalar()
    assert n_configs == 200                                       # one row per hash, shared by both
    claims = s.claim(run_id, "w", n=1000)
    by_hash = collections.defaultdict(set)
    for c in claims:
        by_hash[c.config_json].add(c.configuration_id)
    assert len(claims) == 400 and len(by_hash) == 200 and all(len(v) == 1 for v in by_hash.values())
