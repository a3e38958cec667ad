"""Crash safety: SIGKILL the tuner mid-run, then --resume to the budget without re-measuring."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter

import pytest

from ensemble.storage import Storage
from tests.ensemble.driver_helpers import db_url

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
APP = "tests.ensemble.driver_helpers:SlowQuadApp"
TECH = "tests.ensemble.driver_helpers:TinyRandom"


def _cli(url, log, *extra):
    env = dict(os.environ, ENSEMBLE_TEST_MEASURE_LOG=str(log), PYTHONPATH=ROOT)
    return subprocess.Popen(
        [sys.executable, "-m", "ensemble.cli", "run", APP, "--database", url, "--run-name", "crash",
         "--technique", TECH, "--test-limit", "150", "--seed", "4", "--quiet", *extra],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def _finished(st, run_id):
    return {r.request_id: (r.config_hash, r.state, r.value)
            for r in st.trials(run_id) if r.state not in ("WAITING", "RUNNING")}


@pytest.mark.slow
def test_sigkill_then_resume(tmp_path):
    url, log = db_url(tmp_path), tmp_path / "measured.log"
    proc = _cli(url, log)
    st = None
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        time.sleep(0.2)
        if st is None and (tmp_path / "t.db").exists():
            try:
                st = Storage(url)
            except Exception:  # noqa: BLE001 - schema being created
                continue
        run = st.get_run("crash") if st else None
        if run and st.counts(run.id)["measured"] >= 40:
            break
        assert proc.poll() is None, proc.communicate()
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    run = st.get_run("crash")
    before = _finished(st, run.id)
    assert 40 <= len(before) < 150
    measured_before = log.read_text().splitlines()

    proc = _cli(url, log, "--resume")
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err
    assert "best configuration" in out

    after = _finished(st, run.id)
    for rid, row in before.items():                          # every committed result is still there
        assert after[rid] == row
    counts = st.counts(run.id)
    assert counts["unique"] == 150 and counts["WAITING"] == 0 and counts["RUNNING"] == 0
    committed = {h for h, _, _ in before.values()}
    measured_after = log.read_text().splitlines()[len(measured_before):]
    # nothing committed before the kill was measured again
    from tests.ensemble.driver_helpers import small_space

    space = small_space(1000)
    again = {space.config_hash({"x": int(a), "y": int(b)}) for a, b in (ln.split(",") for ln in measured_after)}
    assert not (again & committed)
    # and every configuration was measured (committed) exactly once overall
    per_config = Counter(h for rid, (h, _, _) in after.items()
                         if not next(r for r in st.trials(run.id) if r.request_id == rid).duplicate)
    assert max(per_config.values()) == 1
