"""Storage conformance suite: the BaseStorage contract, for every store.

A backend subclasses :class:`StorageConformance` and supplies two fixtures:
``url`` (a fresh, empty store's URL; opening it twice in the test must reach
the same data) and ``age_heartbeat`` (a callable ``(storage, request_id,
seconds)`` that makes a RUNNING request's heartbeat that much older, the one
condition the API cannot create on purpose).  Stores are opened through the
``make_storage`` fixture (``open_storage`` by default).  SQL-only behaviour
(schema stamping, revisions) lives in ``sql_suite.py``.
"""

from __future__ import annotations

import math

import pytest

from ensemble.errors import RunExistsError, StorageError
from ensemble.result import TrialState
from ensemble.storage import BaseStorage, NewRequest, open_storage

FINISHED = ["OK", "FAILED", "TIMEOUT", "INVALID"]


def req(i: int, technique: str = "Random", **kw) -> NewRequest:
    return NewRequest(config_json=f'{{"x":{i}}}', config_hash=f"h{i}", technique=technique, **kw)


class StorageConformance:
    @pytest.fixture
    def make_storage(self):
        """Open a store by URL; every store opened in the test is closed afterwards."""
        opened: list[BaseStorage] = []

        def make(url: str) -> BaseStorage:
            opened.append(open_storage(url))
            return opened[-1]

        yield make
        for s in opened:
            s.close()

    @pytest.fixture
    def age_heartbeat(self):
        pytest.fail("a storage backend's test class must supply the age_heartbeat fixture")

    @pytest.fixture
    def storage(self, url, make_storage):
        return make_storage(url)

    @pytest.fixture
    def run_id(self, storage):
        return storage.create_run("r", app="demo", space_json={"p": 1}, space_hash="s1")

    # ---------------------------------------------------------- opening
    def test_is_a_base_storage(self, storage):
        assert isinstance(storage, BaseStorage)
        assert isinstance(storage.shareable_across_processes, bool)
        assert isinstance(storage.url, str)

    def test_reopening_keeps_data(self, url, storage, run_id, make_storage):
        storage.add_requests(run_id, [req(1)])
        again = make_storage(url)
        assert again.get_run("r").id == run_id
        assert again.counts(run_id)["WAITING"] == 1

    # ------------------------------------------------------------ runs
    def test_create_run_is_idempotent_for_same_space(self, storage, run_id):
        assert storage.create_run("r", app="demo", space_json="{}", space_hash="s1") == run_id
        assert [r.name for r in storage.list_runs()] == ["r"]
        rec = storage.get_run("r")
        assert (rec.id, rec.app, rec.space_json, rec.status) == (run_id, "demo", '{"p":1}', "created")
        assert storage.get_run("nope") is None

    def test_create_run_with_other_space_is_refused(self, storage, run_id):
        with pytest.raises(RunExistsError, match="--run-name"):
            storage.create_run("r", app="demo", space_json="{}", space_hash="other")

    def test_set_run_status(self, storage, run_id):
        storage.set_run_status(run_id, "finished")
        assert storage.get_run("r").status == "finished"
        with pytest.raises(StorageError, match="run_id=999"):
            storage.set_run_status(999, "finished")

    # -------------------------------------------------------- requests
    def test_add_requests_dedups_configurations_by_hash(self, storage, run_id):
        ids = storage.add_requests(run_id, [req(1), req(2), req(1)])
        assert ids == sorted(ids) and len(set(ids)) == 3
        claims = storage.claim(run_id, "w", n=10)
        assert [c.request_id for c in claims] == ids
        assert claims[0].configuration_id == claims[2].configuration_id != claims[1].configuration_id
        assert claims[1].config == {"x": 2}
        # a second batch reuses the stored configuration
        (more,) = storage.add_requests(run_id, [req(2)])
        assert storage.claim(run_id, "w")[0].configuration_id == claims[1].configuration_id
        assert more > ids[-1]

    def test_configurations_are_per_run(self, storage, run_id):
        other = storage.create_run("r2", app="demo", space_json="{}", space_hash="s1")
        storage.add_requests(run_id, [req(1)])
        storage.add_requests(other, [req(1)])
        a, b = storage.claim(run_id, "w"), storage.claim(other, "w")
        assert a[0].configuration_id != b[0].configuration_id
        assert storage.claim(run_id, "w") == []

    @pytest.mark.parametrize("state", FINISHED)
    def test_waiting_running_finished(self, storage, run_id, state):
        (rid,) = storage.add_requests(run_id, [req(1, limit_s=2.5)])
        assert storage.counts(run_id)["WAITING"] == 1
        (claim,) = storage.claim(run_id, "w1")
        assert (claim.request_id, claim.limit_s, claim.config) == (rid, 2.5, {"x": 1})
        assert storage.counts(run_id)["RUNNING"] == 1
        assert storage.finish(rid, "w1", state=state, value=3.5, metrics={"regs": 32}, times=[3.4, 3.6],
                              cost=0.1, reason=None if state == "OK" else "why")
        row = storage.trials(run_id)[0]
        assert (row.state, row.worker, row.value, row.metrics, row.times, row.cost) == (
            state, "w1", 3.5, {"regs": 32}, [3.4, 3.6], 0.1)
        assert row.created_at <= row.claimed_at <= row.finished_at
        # finished requests refuse every further update
        assert not storage.finish(rid, "w1", state="OK", value=1.0)
        assert storage.heartbeat([rid], "w1") == 0
        assert storage.requeue_stale(run_id, 0.0) == 0
        assert storage.claim(run_id, "w2") == []
        assert storage.trials(run_id)[0].value == 3.5
        counts = storage.counts(run_id)
        assert (counts[state], counts["measured"], counts["unique"], counts["requests"]) == (1, 1, 1, 1)

    def test_states_are_trial_state_values(self, storage, run_id):
        """Records carry TrialState members (equal to their strings); finish takes either spelling."""
        a, b = storage.add_requests(run_id, [req(1), req(2)])
        assert storage.trials(run_id)[0].state is TrialState.WAITING
        storage.claim(run_id, "w", n=2)
        assert storage.trials(run_id)[0].state is TrialState.RUNNING
        assert storage.finish(a, "w", state=TrialState.TIMEOUT)
        assert storage.finish(b, "w", state="INVALID")
        assert [(t.state, t.state) for t in storage.finished_since(run_id, 0)] == [
            (TrialState.TIMEOUT, "TIMEOUT"), (TrialState.INVALID, "INVALID")]
        assert all(type(t.state) is TrialState for t in storage.trials(run_id))
        assert storage.result_for_hash(run_id, "h1").state is TrialState.TIMEOUT
        counts = storage.counts(run_id)
        assert all(type(k) is str for k in counts) and counts["TIMEOUT"] == counts[TrialState.INVALID] == 1

    def test_finish_refuses_waiting_and_foreign_requests(self, storage, run_id):
        a, _b = storage.add_requests(run_id, [req(1), req(2)])
        assert not storage.finish(a, "w1", state="OK", value=1.0)  # still WAITING
        storage.claim(run_id, "w1")
        assert not storage.finish(a, "w2", state="OK", value=1.0)  # RUNNING by someone else
        assert storage.finish(a, "w1", state="OK", value=1.0)
        assert storage.counts(run_id)["OK"] == 1 and storage.counts(run_id)["WAITING"] == 1

    def test_finish_rejects_unknown_state_and_bad_metrics_without_writing(self, storage, run_id):
        (rid,) = storage.add_requests(run_id, [req(1)])
        storage.claim(run_id, "w")
        with pytest.raises(StorageError, match="state='DONE'"):
            storage.finish(rid, "w", state="DONE", value=1.0)
        with pytest.raises(StorageError, match=r"metrics\['m'\]"):
            storage.finish(rid, "w", state="OK", value=1.0, metrics={"m": object()})
        with pytest.raises(StorageError, match="finish.value='fast'.: must be a number"):
            storage.finish(rid, "w", state="OK", value="fast")
        assert storage.counts(run_id)["RUNNING"] == 1
        assert storage.finish(rid, "w", state="OK", value=1.0)

    def test_claim_needs_a_worker_name(self, storage, run_id):
        storage.add_requests(run_id, [req(1)])
        with pytest.raises(StorageError, match="worker=None"):
            storage.claim(run_id, None)
        assert storage.counts(run_id)["WAITING"] == 1

    def test_double_claim_loses(self, storage, run_id):
        storage.add_requests(run_id, [req(1), req(2)])
        first = storage.claim(run_id, "w1", n=5)
        assert len(first) == 2
        assert storage.claim(run_id, "w2", n=5) == []
        assert not storage.finish(first[0].request_id, "w2", state="OK", value=1.0)

    def test_claim_order_and_limit(self, storage, run_id):
        ids = storage.add_requests(run_id, [req(i) for i in range(5)])
        assert [c.request_id for c in storage.claim(run_id, "w", n=2)] == ids[:2]
        assert [c.request_id for c in storage.claim(run_id, "w", n=0)] == []
        assert [c.request_id for c in storage.claim(run_id, "w", n=9)] == ids[2:]

    def test_values_keep_infinities_and_nan_becomes_none(self, storage, run_id):
        a, b, c = storage.add_requests(run_id, [req(1), req(2), req(3)])
        storage.claim(run_id, "w", n=3)
        storage.finish(a, "w", state="FAILED", value=math.inf, metrics={"m": -math.inf, "n": math.nan})
        storage.finish(b, "w", state="OK", value=math.nan, times=[math.inf])
        storage.finish(c, "w", state="OK", value=-1e308)
        rows = storage.finished_since(run_id, 0)
        assert rows[0].value == math.inf and rows[0].metrics["m"] == -math.inf and math.isnan(rows[0].metrics["n"])
        assert rows[1].value is None and rows[1].times == [math.inf]
        assert rows[2].value == -1e308

    # ------------------------------------------- insert already claimed
    def test_add_requests_claim_for_inserts_running_for_that_worker(self, storage, run_id):
        (old,) = storage.add_requests(run_id, [req(1)])
        ids = storage.add_requests(run_id, [req(2, limit_s=1.5), req(1)], claim_for="me")
        assert ids == sorted(ids) and ids[0] > old
        counts = storage.counts(run_id)
        assert (counts["WAITING"], counts["RUNNING"]) == (1, 2)
        rows = {r.request_id: r for r in storage.trials(run_id)}
        for rid in ids:
            row = rows[rid]
            assert (row.state, row.worker) == ("RUNNING", "me")
            assert row.created_at <= row.claimed_at
        # a known configuration is reused, not inserted again
        assert rows[ids[1]].configuration_id == rows[old].configuration_id
        # other workers only ever see the WAITING one; the claimed rows behave like claim()'s
        assert [c.request_id for c in storage.claim(run_id, "other", n=5)] == [old]
        assert storage.heartbeat(ids, "me") == 2 and storage.heartbeat(ids, "other") == 0
        assert not storage.finish(ids[0], "other", state="OK", value=1.0)
        assert storage.finish(ids[0], "me", state="OK", value=1.0, cost=0.5)
        assert storage.finish(ids[1], "me", state="FAILED", reason="boom")
        assert [(r.request_id, r.state, r.worker) for r in storage.finished_since(run_id, 0)] == [
            (ids[0], "OK", "me"), (ids[1], "FAILED", "me")]

    def test_add_and_claim_returns_what_claim_would(self, storage, run_id):
        (first,) = storage.add_requests(run_id, [req(1)])
        storage.claim(run_id, "w")
        storage.finish(first, "w", state="OK", value=4.0)
        ids, claims = storage.add_and_claim(
            run_id, [req(2, limit_s=2.5), req(1, duplicate=True), req(3)], "me")
        assert len(ids) == 3
        assert [(c.request_id, c.limit_s, c.config) for c in claims] == [
            (ids[0], 2.5, {"x": 2}), (ids[2], None, {"x": 3})]
        rows = {r.request_id: r for r in storage.trials(run_id)}
        assert [c.configuration_id for c in claims] == [rows[ids[0]].configuration_id,
                                                        rows[ids[2]].configuration_id]
        # the duplicate is finished at once and never looks claimed or alive
        dup = rows[ids[1]]
        assert (dup.state, dup.duplicate, dup.worker, dup.claimed_at, dup.value) == ("OK", True, None, None, 4.0)
        assert storage.heartbeat([ids[1]], "me") == 0
        # stale claimed requests return to the queue like claimed ones
        assert storage.requeue_stale(run_id, 0.0) == 2
        assert [c.request_id for c in storage.claim(run_id, "other", n=5)] == [ids[0], ids[2]]

    def test_add_and_claim_needs_a_worker_name_and_writes_nothing(self, storage, run_id):
        with pytest.raises(StorageError, match="worker=''"):
            storage.add_and_claim(run_id, [req(1)], "")
        with pytest.raises(StorageError, match="worker=3"):
            storage.add_requests(run_id, [req(1)], claim_for=3)
        assert storage.counts(run_id)["requests"] == 0
        assert storage.add_and_claim(run_id, [], "me") == ([], [])

    def test_add_and_claim_duplicate_without_result_writes_nothing(self, storage, run_id):
        with pytest.raises(StorageError, match="duplicate=False"):
            storage.add_and_claim(run_id, [req(2), req(1, duplicate=True)], "me")
        assert storage.counts(run_id)["requests"] == 0

    # ------------------------------------------------------ heartbeats
    def test_stale_request_returns_to_waiting_and_live_one_does_not(self, storage, run_id, age_heartbeat):
        dead, live = storage.add_requests(run_id, [req(1), req(2)])
        storage.claim(run_id, "dead-worker")
        storage.claim(run_id, "live-worker")
        age_heartbeat(storage, dead, 3600)
        assert storage.heartbeat([live], "live-worker") == 1
        assert storage.requeue_stale(run_id, 60) == 1
        counts = storage.counts(run_id)
        assert (counts["WAITING"], counts["RUNNING"]) == (1, 1)
        # the dead worker's late result is refused; a new worker measures it
        assert not storage.finish(dead, "dead-worker", state="OK", value=1.0)
        (again,) = storage.claim(run_id, "new-worker")
        assert again.request_id == dead
        assert storage.finish(dead, "new-worker", state="OK", value=2.0)
        assert storage.finish(live, "live-worker", state="OK", value=3.0)
        assert [t.worker for t in storage.trials(run_id)] == ["new-worker", "live-worker"]

    def test_withdraw_deletes_only_the_named_waiting_requests(self, storage, run_id):
        """A stopped search withdraws its unclaimed queue; claimed ones and other searches' stay."""
        running, waiting, others = storage.add_requests(run_id, [req(1), req(2), req(3)])
        (claim,) = storage.claim(run_id, "w")
        assert claim.request_id == running
        assert storage.withdraw_waiting(run_id, [running, waiting]) == [waiting]
        counts = storage.counts(run_id)
        assert (counts["WAITING"], counts["RUNNING"], counts["requests"]) == (1, 1, 2)
        assert storage.finish(running, "w", state="OK", value=1.0)   # the running one still finishes
        assert storage.withdraw_waiting(run_id, []) == []
        (left,) = storage.claim(run_id, "w2")                         # another search's request survived
        assert left.request_id == others

    def test_heartbeat_only_touches_own_running_requests(self, storage, run_id):
        a, b = storage.add_requests(run_id, [req(1), req(2)])
        storage.claim(run_id, "w1")
        assert storage.heartbeat([a, b], "w1") == 1
        assert storage.heartbeat([a], "w2") == 0
        assert storage.heartbeat([], "w1") == 0

    def test_requeue_uses_elapsed_database_time(self, storage, run_id):
        import time

        storage.add_requests(run_id, [req(1)])
        storage.claim(run_id, "w")
        assert storage.requeue_stale(run_id, 60) == 0
        time.sleep(0.3)
        assert storage.requeue_stale(run_id, 0.1) == 1

    # ------------------------------------------------------ duplicates
    def test_duplicate_is_answered_from_database(self, storage, run_id):
        (first,) = storage.add_requests(run_id, [req(1)])
        storage.claim(run_id, "w")
        storage.finish(first, "w", state="OK", value=4.0, metrics={"m": 1}, times=[4.0], cost=2.0)
        (dup,) = storage.add_requests(run_id, [req(1, technique="NelderMead", duplicate=True)])
        assert storage.claim(run_id, "w") == []
        rows = storage.finished_since(run_id, 0)
        assert [(r.request_id, r.duplicate, r.state, r.value, r.metrics, r.technique) for r in rows] == [
            (first, False, "OK", 4.0, {"m": 1}, "Random"), (dup, True, "OK", 4.0, {"m": 1}, "NelderMead")]
        assert rows[1].cost == 0.0 and rows[1].finished_at is not None
        counts = storage.counts(run_id)
        assert (counts["OK"], counts["measured"], counts["unique"], counts["duplicates"]) == (2, 1, 1, 1)
        assert storage.result_for_hash(run_id, "h1").request_id == first

    def test_duplicate_copies_failed_state(self, storage, run_id):
        (first,) = storage.add_requests(run_id, [req(1)])
        storage.claim(run_id, "w")
        storage.finish(first, "w", state="FAILED", value=math.inf, reason="compile error")
        storage.add_requests(run_id, [req(1, duplicate=True)])
        dup = storage.trials(run_id)[1]
        assert (dup.state, dup.duplicate, dup.value, dup.reason) == ("FAILED", True, math.inf, "compile error")

    def test_duplicate_without_result_writes_nothing(self, storage, run_id):
        storage.add_requests(run_id, [req(1)])
        with pytest.raises(StorageError, match="duplicate=False"):
            storage.add_requests(run_id, [req(2), req(1, duplicate=True)])
        assert storage.counts(run_id)["requests"] == 1
        assert [c.config for c in storage.claim(run_id, "w", n=5)] == [{"x": 1}]

    def test_result_for_hash(self, storage, run_id):
        assert storage.result_for_hash(run_id, "h1") is None
        storage.add_requests(run_id, [req(1)])
        assert storage.result_for_hash(run_id, "h1") is None  # WAITING has no result
        (c,) = storage.claim(run_id, "w")
        storage.finish(c.request_id, "w", state="OK", value=1.5)
        hit = storage.result_for_hash(run_id, "h1")
        assert (hit.value, hit.config, hit.config_hash) == (1.5, {"x": 1}, "h1")

    # --------------------------------------------------------- reading
    def test_finished_since_in_request_order(self, storage, run_id):
        ids = storage.add_requests(run_id, [req(i) for i in range(4)])
        storage.claim(run_id, "w", n=4)
        for rid in (ids[2], ids[0], ids[3]):
            storage.finish(rid, "w", state="OK", value=float(rid))
        assert [t.request_id for t in storage.finished_since(run_id, 0)] == [ids[0], ids[2], ids[3]]
        assert [t.request_id for t in storage.finished_since(run_id, ids[0])] == [ids[2], ids[3]]
        storage.finish(ids[1], "w", state="OK", value=1.0)
        assert [t.request_id for t in storage.finished_since(run_id, ids[0])] == ids[1:]

    def test_trials_lists_every_request(self, storage, run_id):
        ids = storage.add_requests(run_id, [req(1), req(2)])
        storage.claim(run_id, "w")
        storage.finish(ids[0], "w", state="OK", value=1.0)
        rows = storage.trials(run_id)
        assert [(r.request_id, r.state, r.value, r.metrics) for r in rows] == [
            (ids[0], "OK", 1.0, {}), (ids[1], "WAITING", None, {})]
        assert rows[1].claimed_at is None and rows[1].config == {"x": 2}

    def test_counts_has_every_state(self, storage, run_id):
        counts = storage.counts(run_id)
        assert all(counts[s] == 0 for s in ["WAITING", "RUNNING", *FINISHED, "unique", "duplicates"])

    def test_run_state_roundtrip(self, storage, run_id):
        assert storage.get_state(run_id, "bandit") is None
        assert storage.get_state(run_id, "bandit", default={}) == {}
        storage.put_state(run_id, "bandit", {"arms": [1, 2], "best": math.inf})
        storage.put_state(run_id, "bandit", {"arms": [3], "best": -math.inf, "t": (1, 2)})
        assert storage.get_state(run_id, "bandit") == {"arms": [3], "best": -math.inf, "t": [1, 2]}

    def test_threads_share_one_storage(self, storage, run_id):
        from concurrent.futures import ThreadPoolExecutor

        ids = storage.add_requests(run_id, [req(i) for i in range(200)])

        def work(worker: str) -> list[int]:
            done = []
            while claims := storage.claim(run_id, worker):
                for c in claims:
                    assert storage.finish(c.request_id, worker, state="OK", value=float(c.config["x"]))
                    done.append(c.request_id)
            return done

        with ThreadPoolExecutor(4) as pool:
            results = list(pool.map(work, [f"t{k}" for k in range(4)]))
        finished = sorted(r for done in results for r in done)
        assert finished == ids
        assert storage.counts(run_id)["OK"] == 200

    # ------------------------------------- submit: several search drivers on one run
    def test_submit_measures_a_configuration_once_per_run(self, storage, run_id):
        a = storage.submit(run_id, [req(1), req(2)])
        assert a.status == ["new", "new"] and a.wait_for == {} and a.used is None
        # another driver asks for h1 while it is WAITING, then RUNNING: nothing inserted, wait for it
        b = storage.submit(run_id, [req(1, technique="B"), req(3, technique="B")])
        assert b.status == ["pending", "new"] and b.ids[0] is None and b.wait_for == {0: a.ids[0]}
        (c,) = storage.claim(run_id, "w")
        assert c.request_id == a.ids[0]
        assert storage.submit(run_id, [req(1, technique="C")]).wait_for == {0: a.ids[0]}
        storage.finish(c.request_id, "w", state="OK", value=2.5, metrics={"m": 1})
        # finished: answered as a duplicate of that result, in the same call
        d = storage.submit(run_id, [req(1, technique="D")])
        assert d.status == ["duplicate"] and d.claims == []
        row = next(r for r in storage.trials(run_id) if r.request_id == d.ids[0])
        assert (row.duplicate, row.state, row.value, row.metrics, row.cost, row.technique) == (
            True, "OK", 2.5, {"m": 1}, 0.0, "D")
        measured = [r.config_hash for r in storage.trials(run_id) if not r.duplicate]
        assert sorted(measured) == ["h1", "h2", "h3"]                     # h1 measured once

    def test_submit_repeats_in_one_batch_and_failed_results(self, storage, run_id):
        s = storage.submit(run_id, [req(5), req(6), req(5, technique="again")])
        assert s.status == ["new", "new", "pending"] and s.wait_for == {2: s.ids[0]} and s.ids[2] is None
        storage.claim(run_id, "w", n=2)
        storage.finish(s.ids[0], "w", state="FAILED", reason="compile error")
        # a failed measurement is a result too: not measured again
        (again,) = storage.submit(run_id, [req(5)]).status
        assert again == "duplicate"
        assert storage.counts(run_id)["measured"] == 1 and storage.trials(run_id)[-1].state == "FAILED"

    def test_submit_asked_duplicates_and_claim_for(self, storage, run_id):
        s = storage.submit(run_id, [req(1), req(2)], claim_for="w1")
        assert s.status == ["new", "new"] and [c.request_id for c in s.claims] == s.ids
        assert storage.counts(run_id)["RUNNING"] == 2 and storage.claim(run_id, "w2") == []
        storage.finish(s.ids[0], "w1", state="OK", value=1.0)
        t = storage.submit(run_id, [req(1, duplicate=True), req(2), req(3)], claim_for="w1")
        assert t.status == ["duplicate", "pending", "new"] and [c.request_id for c in t.claims] == [t.ids[2]]
        with pytest.raises(StorageError, match="duplicate=False"):
            storage.submit(run_id, [req(9, duplicate=True)])
        with pytest.raises(StorageError, match="worker"):
            storage.submit(run_id, [req(10)], claim_for="")

    def test_submit_budget_counts_every_driver(self, storage, run_id):
        storage.add_requests(run_id, [req(100)])                  # a request of another driver counts
        a = storage.submit(run_id, [req(1), req(2)], budget=4)
        assert a.status == ["new", "new"] and a.used == 3
        b = storage.submit(run_id, [req(3), req(4), req(3)], budget=4)
        assert b.status == ["new", "over_budget", "pending"] and b.used == 4
        assert storage.submit(run_id, [req(5)], budget=4).status == ["over_budget"]
        # answers from stored results cost no budget
        (c,) = storage.claim(run_id, "w")
        storage.finish(c.request_id, "w", state="OK", value=1.0)
        d = storage.submit(run_id, [req(100), req(100, duplicate=True)], budget=4)
        assert d.status == ["duplicate", "duplicate"] and d.used == 4
        assert storage.counts(run_id)["requests"] - storage.counts(run_id)["duplicates"] == 4

    @pytest.mark.parametrize("budget", [None, 45])
    def test_submit_races_measure_each_configuration_once(self, url, storage, run_id, budget, make_storage):
        """Four connections submit the same configurations at the same moment (as four ranks would)."""
        import random
        import threading

        n_threads, n_configs = 4, 60
        # half of them stored already without a request (e.g. withdrawn): no insert conflict guards those
        assert set(storage.submit(run_id, [req(j) for j in range(0, n_configs, 2)], budget=0).status) == {
            "over_budget"}
        barrier = threading.Barrier(n_threads)
        outcomes: list[tuple[str, str]] = []
        lock = threading.Lock()

        stores = [make_storage(url) for _ in range(n_threads)]   # a connection each, as four ranks would

        def submitter(k: int) -> None:
            own = stores[k]
            order = list(range(n_configs))
            random.Random(k).shuffle(order)
            barrier.wait()
            for i in range(0, n_configs, 3):       # small batches, overlapping between threads
                batch = [req(j, technique=f"t{k}") for j in order[i:i + 3]]
                sub = own.submit(run_id, batch, budget=budget)
                with lock:
                    outcomes.extend((it.config_hash, st) for it, st in zip(batch, sub.status))

        threads = [threading.Thread(target=submitter, args=(k,)) for k in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        new = [h for h, st in outcomes if st == "new"]
        assert len(new) == len(set(new)) == (budget or n_configs)  # once each, and exactly the budget
        rows = storage.trials(run_id)
        measured = [r.config_hash for r in rows if not r.duplicate]
        assert sorted(measured) == sorted(new)
        assert all(st in ("pending", "over_budget") for h, st in outcomes if h in set(new) and st != "new")
