"""4 measurement worker processes (`ensemble-tuner worker`) on one run: each request measured once.

On one SQLite file and on PostgreSQL (TEST_DB_URL, marker server_db). The
search driver runs with --parallelism 0 (no local workers), so every
measurement comes from the four attached worker processes.
"""

from __future__ import annotations

import os
import subprocess
import sys
import uuid
from collections import Counter

import pytest

from ensemble.storage import Storage

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TRIALS = 4000
WORKERS = 4


def _run_concurrently(url: str, tmp_path) -> None:
    name = f"conc-{uuid.uuid4().hex[:8]}"
    log = tmp_path / "measured.log"
    env = dict(os.environ, ENSEMBLE_TEST_MEASURE_LOG=str(log), PYTHONPATH=ROOT)
    base = [sys.executable, "-m", "ensemble.cli"]
    search = subprocess.Popen(
        base + ["run", "tests.ensemble.driver_helpers:BigQuadApp", "--database", url, "--run-name", name,
                "--technique", "tests.ensemble.driver_helpers:TinyRandom", "--parallelism", "0",
                "--test-limit", str(TRIALS), "--seed", "11", "--quiet"],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    workers = [subprocess.Popen(base + ["worker", "--database", url, "--run", name, "--wait", "120",
                                        "--name", f"w{i}"],
                                cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
               for i in range(WORKERS)]
    _, err = search.communicate(timeout=900)
    assert search.returncode == 0, err
    for w in workers:
        _, werr = w.communicate(timeout=120)
        assert w.returncode == 0, werr

    st = Storage(url)
    run = st.get_run(name)
    rows = st.trials(run.id)
    measured = [r for r in rows if not r.duplicate]
    counts = st.counts(run.id)
    assert counts["WAITING"] == 0 and counts["RUNNING"] == 0
    assert counts["unique"] == TRIALS == len(measured)
    assert all(r.state == "OK" for r in measured)
    # every request measured exactly once: one log line per measured request, no config twice
    lines = Counter(log.read_text().splitlines())
    assert sum(lines.values()) == TRIALS and max(lines.values()) == 1
    assert set(lines) == {f"{r.config['x']},{r.config['y']}" for r in measured}
    # the four worker processes shared the work, the search process measured nothing
    by_worker = Counter(r.worker.rsplit(":", 1)[-1] for r in measured)
    assert set(by_worker) == {f"w{i}" for i in range(WORKERS)}


@pytest.mark.slow
def test_four_worker_processes_sqlite(tmp_path):
    _run_concurrently(f"sqlite:///{tmp_path / 'conc.db'}", tmp_path)


@pytest.mark.slow
@pytest.mark.server_db
def test_four_worker_processes_postgresql(tmp_path):
    url = os.environ.get("TEST_DB_URL")
    if not url:
        pytest.skip("TEST_DB_URL is not set (PostgreSQL server tests)")
    _run_concurrently(url, tmp_path)
