"""Search + measurement drivers in one process: dedup, seeds, stop rules, parallel threads."""

from __future__ import annotations

import json
import math
import os

import pytest

from ensemble.driver.local import run_app
from ensemble.settings import RunSettings
from ensemble.storage import Storage
from tests.ensemble.driver_helpers import QuadApp, Scripted, TinyRandom, db_url

A, B, C = {"x": 1, "y": 1}, {"x": 7, "y": 3}, {"x": 2, "y": 9}


def test_duplicate_is_answered_from_the_database_and_not_counted(tmp_path):
    app = QuadApp()
    tech = Scripted([A, B, A, C, A, B])
    res = run_app(app, RunSettings(database=db_url(tmp_path), run_name="dup", quiet=True), technique=tech)
    assert app.calls == 3                       # A, B, C measured once each
    assert res.evaluations == 3 and res.duplicates == 3 and res.trials == 6
    st = Storage(db_url(tmp_path))
    run = st.get_run("dup")
    counts = st.counts(run.id)
    assert counts["unique"] == 3 and counts["duplicates"] == 3 and counts["measured"] == 3
    rows = st.trials(run.id)
    dups = [r for r in rows if r.duplicate]
    assert len(dups) == 3 and all(r.state == "OK" and r.cost == 0.0 for r in dups)
    # the technique got every answer back, repeats marked as duplicates with the stored value
    assert sorted(t.duplicate for t in tech.observed) == [False] * 3 + [True] * 3
    by_config = {}
    for t in tech.observed:
        by_config.setdefault(t.config_hash, []).append(t)
    for trials in by_config.values():                 # the first answer measured, repeats copied
        assert not trials[0].duplicate and all(t.duplicate for t in trials[1:])
        assert len({t.value for t in trials}) == 1
    assert res.best_config == B and res.best_value == 1.0


def test_seed_configurations_are_measured_first_and_reported_as_foreign(tmp_path):
    class Seeded(QuadApp):
        def seed_configurations(self):
            return [C]

    tech = Scripted([A, C])
    res = run_app(Seeded(), RunSettings(database=db_url(tmp_path), run_name="s", quiet=True), technique=tech)
    rows = Storage(db_url(tmp_path)).trials(Storage(db_url(tmp_path)).get_run("s").id)
    assert rows[0].technique == "seed" and rows[0].config == C
    assert [t.config for t in tech.foreign] == [C]
    assert sorted(t.duplicate for t in tech.observed) == [False, True]   # C again: answered from DB
    assert res.evaluations == 2


def test_test_limit_counts_unique_evaluations(tmp_path):
    app = QuadApp(hi=4)  # 25 points: random sampling repeats often
    res = run_app(app, RunSettings(database=db_url(tmp_path), test_limit=15, seed=3, quiet=True),
                  technique=TinyRandom(seed=3))
    assert res.evaluations == 15 == app.calls
    assert res.duplicates > 0


def test_target_stops_the_run(tmp_path):
    res = run_app(QuadApp(), RunSettings(database=db_url(tmp_path), target=1.0, test_limit=400, seed=1,
                                         quiet=True), technique=TinyRandom(seed=1))
    assert res.best_value == 1.0 and res.best_config == B
    assert "target" in res.stop_reason


def test_run_ends_when_technique_is_done(tmp_path):
    res = run_app(QuadApp(), RunSettings(database=db_url(tmp_path), quiet=True),
                  technique=TinyRandom(seed=0, stop_after_proposals=5))
    assert res.trials == 5
    assert "nothing more" in res.stop_reason


@pytest.mark.parametrize("parallelism", [2, 4])
def test_parallel_threads_measure_each_request_once(tmp_path, parallelism):
    app = QuadApp(hi=50)
    res = run_app(app, RunSettings(database=db_url(tmp_path), run_name="p", test_limit=120,
                                   parallelism=parallelism, seed=2, quiet=True), technique=TinyRandom(seed=2))
    st = Storage(db_url(tmp_path))
    counts = st.counts(st.get_run("p").id)
    assert res.evaluations == 120 == counts["unique"] == counts["measured"] == app.calls
    assert counts["WAITING"] == 0 and counts["RUNNING"] == 0
    workers = {r.worker for r in st.trials(st.get_run("p").id) if not r.duplicate}
    assert len(workers) > 1


def test_results_log_has_one_json_line_per_trial(tmp_path):
    log = tmp_path / "log.jsonl"
    res = run_app(QuadApp(), RunSettings(database=db_url(tmp_path), results_log=str(log), quiet=True),
                  technique=Scripted([A, B, A]))
    lines = [json.loads(x) for x in log.read_text().splitlines()]
    assert len(lines) == res.trials == 3
    assert sorted((x["config"]["x"], x["duplicate"]) for x in lines) == [(1, False), (1, True), (7, False)]
    assert [x["value"] for x in lines if x["config"] == B] == [1.0]      # in finish order


def test_failed_trials_rank_last_and_are_counted(tmp_path):
    class Flaky(QuadApp):
        def run(self, config, limit):
            if config["x"] == 7:
                raise RuntimeError("boom")
            return super().run(config, limit)

    res = run_app(Flaky(), RunSettings(database=db_url(tmp_path), quiet=True), technique=Scripted([B, A]))
    assert res.failures == 1 and res.best_config == A
    assert res.best_value is not None and math.isfinite(res.best_value)


@pytest.mark.slow
def test_process_workers(tmp_path):
    res = run_app(QuadApp(), RunSettings(database=db_url(tmp_path), run_name="pp", test_limit=40, parallelism=2,
                                         worker_mode="process", seed=5, quiet=True),
                  app_ref="tests.ensemble.driver_helpers:QuadApp", technique=TinyRandom(seed=5))
    st = Storage(db_url(tmp_path))
    rows = [r for r in st.trials(st.get_run("pp").id) if not r.duplicate and r.state == "OK"]
    assert res.evaluations == 40 == len(rows)
    pids = {int(r.worker.split(":")[1]) for r in rows}
    assert pids and os.getpid() not in pids                     # measured in worker processes
    assert {r.worker.rsplit(":", 1)[1] for r in rows} <= {"proc0", "proc1"}


def test_trial_over_its_limit_is_a_timeout(tmp_path):
    import time as _time

    class Slow(QuadApp):
        def run(self, config, limit):
            assert limit == 0.05
            if config["x"] == 1:
                _time.sleep(0.1)
            return super().run(config, limit)

    res = run_app(Slow(), RunSettings(database=db_url(tmp_path), run_name="t", trial_limit=0.05, quiet=True),
                  technique=Scripted([A, B]))
    st = Storage(db_url(tmp_path))
    rows = {r.config["x"]: r for r in st.trials(st.get_run("t").id)}
    assert rows[1].state == "TIMEOUT" and "limit" in rows[1].reason and rows[1].limit_s == 0.05
    assert rows[7].state == "OK" and res.failures == 1


def test_batch_mode_measures_each_request_once_and_leaves_nothing_running(tmp_path):
    app = QuadApp(hi=50)
    res = run_app(app, RunSettings(database=db_url(tmp_path), run_name="b", test_limit=50, target=30.0, batch=4,
                                   seed=6, quiet=True), technique=TinyRandom(seed=6))
    st = Storage(db_url(tmp_path))
    counts = st.counts(st.get_run("b").id)
    assert counts["RUNNING"] == 0 and counts["measured"] == app.calls == res.evaluations
    assert res.evaluations <= 50
    claimed = [r.claimed_at for r in st.trials(st.get_run("b").id) if not r.duplicate]
    assert len(set(claimed)) < len(claimed)          # several requests shared one claim


class _GreedyStep(TinyRandom):
    """Adaptive: proposes a neighbour of the best result seen, so results steer the trajectory."""

    name = "GreedyStep"

    def __init__(self, *, seed: int | None = None) -> None:
        super().__init__(seed=seed)
        self.best: tuple[float, dict] | None = None

    def propose(self, n):
        space = self._need_space()
        if self.best is None or self.rng.random() < 0.5:  # random half: never stuck on known points
            return space.sample(self.rng, n)
        near = space.neighbours(self.best[1], self.rng)
        return [near[int(self.rng.integers(len(near)))] for _ in range(n)]

    def observe(self, trial):
        super().observe(trial)
        if self.best is None or trial.value < self.best[0]:
            self.best = (trial.value, trial.config)


class _CountingStorage(Storage):
    """Counts the calls that mark which path the same-thread loop took."""

    def __init__(self, url):
        super().__init__(url)
        self.calls = {"claim": 0, "add_and_claim": 0, "add_requests": 0}

    def claim(self, *a, **k):
        self.calls["claim"] += 1
        return super().claim(*a, **k)

    def add_and_claim(self, *a, **k):
        self.calls["add_and_claim"] += 1
        return super().add_and_claim(*a, **k)

    def add_requests(self, *a, **k):
        self.calls["add_requests"] += 1
        return super().add_requests(*a, **k)


class _TwoStepStorage(_CountingStorage):
    """The path before add_and_claim: insert WAITING, then claim in a second transaction."""

    def add_and_claim(self, run_id, items, worker):
        self.calls["add_and_claim"] += 1
        ids = Storage.add_requests(self, run_id, items)
        return ids, Storage.claim(self, run_id, worker, n=sum(not it.duplicate for it in items))


def _tune(tmp_path, name, storage_class, batch):
    st = storage_class(db_url(tmp_path, f"{name}.db"))
    res = run_app(QuadApp(hi=30), RunSettings(database=st.url, run_name=name, test_limit=40, seed=4,
                                              batch=batch, stop_after=60, quiet=True),
                  technique=_GreedyStep(seed=4), storage=st)
    return res, st.trials(st.get_run(name).id), st.calls


@pytest.mark.parametrize("batch", [1, 3])
def test_fast_same_thread_trials_are_inserted_claimed_with_the_same_trajectory(tmp_path, batch):
    res_fast, fast, fast_calls = _tune(tmp_path, "fast", _CountingStorage, batch)
    res_ref, ref, _ = _tune(tmp_path, "ref", _TwoStepStorage, batch)
    # the same requests, results and duplicates in the same order: claiming at insert changes no decision
    assert [(r.config_hash, r.technique, r.state, r.duplicate, r.value) for r in fast] == [
        (r.config_hash, r.technique, r.state, r.duplicate, r.value) for r in ref]
    assert (res_fast.best_config, res_fast.evaluations) == (res_ref.best_config, res_ref.evaluations)
    # inserted already claimed; a claim transaction only when a step inserted nothing to measure
    assert fast_calls["add_and_claim"] >= res_fast.evaluations / batch and fast_calls["claim"] < 5
    assert {r.state for r in fast} == {"OK"}
    me = {r.worker for r in fast if not r.duplicate}
    assert len(me) == 1 and None not in me
    for r in fast:
        if not r.duplicate:
            assert r.created_at <= r.claimed_at <= r.finished_at
        else:
            assert (r.worker, r.claimed_at) == (None, None)


def test_slow_same_thread_trials_stay_waiting_for_attached_workers(tmp_path, monkeypatch):
    from ensemble.driver import loops as local

    # every trial counts as slow (>= FAST_TRIAL_S): requests are inserted WAITING and claimed, so an
    # attached `ensemble-tuner worker` may take one; the trajectory is the fast path's
    monkeypatch.setattr(local, "FAST_TRIAL_S", 0.0)
    res_slow, slow, calls = _tune(tmp_path, "slow", _CountingStorage, 1)
    monkeypatch.undo()
    _res_fast, fast, fast_calls = _tune(tmp_path, "fast", _CountingStorage, 1)
    assert fast_calls["add_and_claim"] > 0
    assert calls["add_and_claim"] == 0 and calls["claim"] >= res_slow.evaluations
    assert [(r.config_hash, r.state, r.duplicate, r.value) for r in slow] == [
        (r.config_hash, r.state, r.duplicate, r.value) for r in fast]
