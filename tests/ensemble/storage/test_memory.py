"""The storage conformance suite on the in-memory store, plus what only it has (names, one process)."""

from __future__ import annotations

import dataclasses
import gc
import math
import threading
import time
import uuid

import pytest

from ensemble.storage import MemoryStorage, SQLStorage, jsonenc, open_storage
from ensemble.storage.memory import _floats_json, _loads_dict, _loads_list
from tests.ensemble.storage.suite import StorageConformance, req


def _age_heartbeat(storage: MemoryStorage, rid: int, seconds: float) -> None:
    storage._age_heartbeat(rid, seconds)


class TestMemory(StorageConformance):
    @pytest.fixture
    def url(self):
        # a name of its own per test: opening it again in the test reaches the same store
        return f"memory://test-{uuid.uuid4().hex[:12]}"

    @pytest.fixture
    def age_heartbeat(self):
        return _age_heartbeat

    def test_is_memory_and_not_shareable_across_processes(self, storage, url):
        assert isinstance(storage, MemoryStorage) and not storage.shareable_across_processes
        assert storage.url == url


# ------------------------------------------------------------------ opening by URL
@pytest.mark.parametrize("url", ["memory://", "memory:", "MEMORY://"])
def test_unnamed_urls_give_a_fresh_store_each_time(url):
    a, b = open_storage(url), open_storage(url)
    assert isinstance(a, MemoryStorage) and a is not b
    a.create_run("r", app="a", space_json="{}", space_hash="h")
    assert b.get_run("r") is None


def test_named_url_is_shared_within_the_process():
    name = f"memory://shared-{uuid.uuid4().hex[:8]}"
    a = open_storage(name)
    run_id = a.create_run("r", app="a", space_json="{}", space_hash="h")
    b = open_storage(name)
    assert b is a and b.get_run("r").id == run_id
    assert open_storage(name + "-other").get_run("r") is None


def test_named_store_goes_away_when_nobody_refers_to_it():
    name = f"memory://gone-{uuid.uuid4().hex[:8]}"
    open_storage(name).create_run("r", app="a", space_json="{}", space_hash="h")
    gc.collect()
    assert open_storage(name).get_run("r") is None


def test_other_urls_give_the_sql_store(tmp_path):
    s = open_storage(f"sqlite:///{tmp_path / 'x.db'}", busy_timeout_s=5)
    assert isinstance(s, SQLStorage) and s.shareable_across_processes
    s.close()


def test_db_upgrade_of_a_memory_url_says_what_to_pass():
    from ensemble.errors import StorageError
    from ensemble.storage import upgrade

    with pytest.raises(StorageError, match="no schema on disk to upgrade.*sqlite:///"):
        upgrade("memory://x")


# ------------------------------------------------------------------ threads
def test_concurrent_claims_hand_each_request_out_once():
    """Eight threads claim and finish while two more keep inserting: every request is claimed exactly once."""
    s = MemoryStorage()
    run_id = s.create_run("r", app="a", space_json="{}", space_hash="h")
    n_workers, n_producers, per_producer = 8, 2, 400
    start = threading.Barrier(n_workers + n_producers)
    produced_all = threading.Event()
    claimed: list[list[int]] = [[] for _ in range(n_workers)]
    inserted: list[list[int]] = [[] for _ in range(n_producers)]

    def producer(k: int) -> None:
        start.wait()
        for i in range(per_producer):
            j = k * per_producer + i
            if i % 4 == 0:  # some are measured by the inserting thread itself
                ids, claims = s.add_and_claim(run_id, [req(j)], f"p{k}")
                assert s.finish(claims[0].request_id, f"p{k}", state="OK", value=1.0)
            else:
                ids = s.add_requests(run_id, [req(j)])
            inserted[k].extend(ids)

    def worker(k: int) -> None:
        start.wait()
        while True:
            last_round = produced_all.is_set()  # read before claiming: then an empty claim means all done
            got = s.claim(run_id, f"w{k}", n=1 + k % 3)
            if not got:
                if last_round:
                    return
                time.sleep(0)
                continue
            for c in got:
                assert s.finish(c.request_id, f"w{k}", state="OK", value=2.0)
                claimed[k].append(c.request_id)

    producers = [threading.Thread(target=producer, args=(k,)) for k in range(n_producers)]
    workers = [threading.Thread(target=worker, args=(k,)) for k in range(n_workers)]
    for t in producers + workers:
        t.start()
    for t in producers:
        t.join()
    produced_all.set()
    for t in workers:
        t.join()
    by_workers = sorted(r for ids in claimed for r in ids)
    assert len(by_workers) == len(set(by_workers))
    waiting_ones = sorted(r for k, ids in enumerate(inserted) for i, r in enumerate(ids) if i % 4 != 0)
    assert by_workers == waiting_ones
    counts = s.counts(run_id)
    assert (counts["OK"], counts["WAITING"], counts["RUNNING"]) == (n_producers * per_producer, 0, 0)
    assert [t.request_id for t in s.finished_since(run_id, 0)] == sorted(r for ids in inserted for r in ids)


# ------------------------------------------------------------------ records agree with SQL
def _script(s):
    """The same calls on any store; returns everything it read back."""
    run_id = s.create_run("r", app="demo", space_json={"p": 1}, space_hash="s1", settings_json={"seed": 3})
    a, b, c = s.add_requests(run_id, [req(3), req(1, limit_s=2), req(2)])
    ids, claims = s.add_and_claim(run_id, [req(5), req(4, technique="NM")], "me")
    got = s.claim(run_id, "w", n=2)
    s.finish(a, "w", state="OK", value=1.5, metrics={"m": math.inf}, times=[1.5, 1.25], cost=0.5)
    s.finish(b, "w", state="FAILED", value=math.inf, reason="compile error")
    s.finish(ids[0], "me", state="TIMEOUT", times=[1, 2.5])
    s.add_requests(run_id, [req(3, duplicate=True)])
    sub = s.submit(run_id, [req(1), req(2), req(6), req(6)], budget=7)
    s.withdraw_waiting(run_id, [c])
    s.put_state(run_id, "k", {"a": [1, 2]})

    def strip(rec):
        return dataclasses.replace(rec, **{f: None for f in ("created_at", "claimed_at", "finished_at")
                                           if hasattr(rec, f)})

    return (claims, got, sub, [strip(t) for t in s.trials(run_id)],
            [strip(t) for t in s.finished_since(run_id, 0)], strip(s.result_for_hash(run_id, "h3")),
            s.counts(run_id), s.get_state(run_id, "k"),
            dataclasses.replace(s.get_run("r"), created_at=None, updated_at=None))


def test_records_are_those_of_the_sql_store(tmp_path):
    sql = SQLStorage(f"sqlite:///{tmp_path / 'same.db'}")
    try:
        assert _script(MemoryStorage()) == _script(sql)
    finally:
        sql.close()


def test_timestamps_are_naive_utc_and_ordered():
    import datetime as dt

    s = MemoryStorage()
    run_id = s.create_run("r", app="a", space_json="{}", space_hash="h")
    before = dt.datetime.now(dt.UTC).replace(tzinfo=None)
    (rid,) = s.add_requests(run_id, [req(1)])
    s.claim(run_id, "w")
    s.finish(rid, "w", state="OK", value=1.0)
    row = s.trials(run_id)[0]
    assert row.created_at.tzinfo is None
    assert before <= row.created_at <= row.claimed_at <= row.finished_at
    assert abs((row.finished_at - dt.datetime.now(dt.UTC).replace(tzinfo=None)).total_seconds()) < 60




@pytest.mark.parametrize("times", [[], [1.0], [0.1, 2.5e-7, 1e308, -3.0], [math.inf], [math.nan, 1.0], [1, 2.0],
                                   (0.5, 0.25)])
def test_times_shortcut_writes_what_jsonenc_writes(times):
    """The hot path's shortcuts (style item 4: a fast path checked against the slow one)."""
    text = _floats_json(times)
    assert text == jsonenc.dumps(list(times), where="times")
    back, slow = _loads_list(text), jsonenc.loads(text)
    assert len(back) == len(slow) and all(a == b or (math.isnan(a) and math.isnan(b)) for a, b in zip(back, slow))


@pytest.mark.parametrize("metrics", [{}, {"time": 1.5}, {"a": [1, {"b": math.inf}], "c": "__float__"},
                                     {"n": math.nan}])
def test_metrics_shortcut_reads_what_jsonenc_reads(metrics):
    text = jsonenc.dumps(metrics)
    assert jsonenc.dumps(_loads_dict(text)) == jsonenc.dumps(jsonenc.loads(text)) == text
