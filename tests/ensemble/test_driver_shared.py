"""Several search drivers on one run (a search per MPI rank), without MPI.

Two SearchDrivers with ``shared=True`` on one SQLite file, each with its own
Storage connection and measurement driver, as two ranks of
``ENSEMBLE_MPI_SEARCH=per-rank`` would be.  They propose the same
configurations: the database decides who measures each one (Storage.submit),
the other waits for that result and gets it as a duplicate, and test_limit
holds for the run, not per driver.
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from typing import Any

import pytest

from ensemble.driver.measure import MeasurementDriver
from ensemble.driver.search import SearchDriver, SearchOptions
from ensemble.objective import Minimize
from ensemble.settings import RunSettings
from ensemble.storage import Storage
from ensemble.technique import Technique
from tests.ensemble.driver_helpers import QuadApp, Scripted, TinyRandom, small_space


def FixedList(configs: list[dict[str, Any]]) -> Scripted:
    """Proposes the given configurations in order, n per call, then is done."""
    return Scripted(configs, batched=True)


class SlowQuad(QuadApp):
    """QuadApp over 8 x 8 = 64 points whose trials take a few milliseconds, so requests overlap."""

    def __init__(self) -> None:
        super().__init__(hi=7)
        self.seen: list[tuple[int, int]] = []

    def run(self, config: dict[str, Any], limit: float | None) -> Any:
        self.seen.append((config["x"], config["y"]))
        time.sleep(0.003)
        return super().run(config, limit)


def _open(tmp_path, test_limit: int | None) -> tuple[str, int, RunSettings]:
    url = f"sqlite:///{tmp_path / 'shared.db'}"
    settings = RunSettings(database=url, run_name="shared", test_limit=test_limit, seed=3, quiet=True)
    with Storage(url) as st:
        space = small_space(7)
        run_id = st.create_run("shared", app="tests:SlowQuad", space_json=space.to_json(),
                               space_hash=space.space_hash())
    return url, run_id, settings


def _driver(url: str, run_id: int, settings: RunSettings, technique: Technique, name: str,
            app: Any = None) -> tuple[SearchDriver, MeasurementDriver, Storage]:
    st = Storage(url)
    space = small_space(7)
    technique.bind(space, budget=settings.test_limit, rng=__import__("numpy").random.default_rng(3))
    search = SearchDriver(st, run_id, space, technique, SearchOptions.from_settings(settings, shared=True))
    measure = MeasurementDriver(st, run_id, app or SlowQuad(), Minimize("time"), worker=f"test:{name}")
    return search, measure, st


def test_a_configuration_in_flight_elsewhere_is_waited_for_and_answered_as_duplicate(tmp_path):
    url, run_id, settings = _open(tmp_path, None)
    x = {"x": 1, "y": 2}
    a_tech, b_tech = FixedList([x]), FixedList([x, {"x": 3, "y": 3}])
    a, a_measure, _ = _driver(url, run_id, settings, a_tech, "a")
    b, _b_measure, st = _driver(url, run_id, settings, b_tech, "b")
    a.step()                                   # A inserts x (WAITING)
    b.step()                                   # B wants x too: no second request, B waits for A's
    rows = st.trials(run_id)
    assert [(r.config, r.duplicate) for r in rows] == [(x, False), ({"x": 3, "y": 3}, False)]
    assert b.ledger.waiting_dups and b_tech.observed == []
    assert a_measure.work_one()                # A's worker measures x once
    a.step()
    time.sleep(0.03)
    b.step()                                   # B reads A's result and answers its technique with it
    (answer,) = [t for t in b_tech.observed if t.config == x]
    assert answer.duplicate and answer.value == 1.0 + (1 - 7) ** 2 + (2 - 3) ** 2
    assert [t.config for t in b_tech.foreign] == [x]            # the measurement itself: A's, foreign to B
    assert [(t.config, t.duplicate) for t in a_tech.observed] == [(x, False)]
    measured = Counter(r.config_hash for r in st.trials(run_id) if not r.duplicate)
    assert max(measured.values()) == 1
    assert b.status.unique == 1 and b.status.duplicates == 1


def test_a_configuration_finished_elsewhere_is_a_duplicate_at_once(tmp_path):
    url, run_id, settings = _open(tmp_path, None)
    x = {"x": 4, "y": 4}
    a, a_measure, _ = _driver(url, run_id, settings, FixedList([x]), "a")
    a.step()
    assert a_measure.work_one()
    b_tech = FixedList([x])
    b, _, st = _driver(url, run_id, settings, b_tech, "b")
    b.ledger.known.clear()                           # B has not read A's result (it would, from its cursor)
    b._submit([(x, "Scripted")])
    assert [(t.config, t.duplicate) for t in b_tech.observed] == [(x, True)]
    assert [r.duplicate for r in st.trials(run_id)] == [False, True]


def test_a_withdrawn_request_waited_on_is_measured_by_the_waiter(tmp_path):
    url, run_id, settings = _open(tmp_path, None)
    x = {"x": 5, "y": 6}
    a, _, _ = _driver(url, run_id, settings, FixedList([x]), "a")
    b_tech = FixedList([x])
    b, b_measure, st = _driver(url, run_id, settings, b_tech, "b")
    a.step()
    b.step()
    assert b.submitter.foreign
    a.status.stop_reason = "time limit reached"
    a.finish()                                 # A stops: its WAITING request is withdrawn
    b.submitter._checked = -1e9
    b.submitter._polled = -1e9
    b.step()                                   # B asks again: nobody measures x now, so B does
    assert b_measure.work_one()
    b.step()
    assert [(t.config, t.duplicate) for t in b_tech.observed] == [(x, False)]
    assert [r.worker for r in st.trials(run_id) if r.state == "OK"] == ["test:b"]


def _per_rank(search: SearchDriver, measure: MeasurementDriver, errors: list[BaseException]) -> None:
    try:
        while True:                            # the loop of ensemble.driver.mpi_loops in per-rank mode
            search.step()
            if search.done:
                break
            if not measure.work_one():
                time.sleep(0.001)
    except BaseException as exc:  # noqa: BLE001 - reported by the test
        errors.append(exc)


@pytest.mark.parametrize("drivers", [2, 3])
def test_drivers_with_the_same_proposals_measure_each_configuration_once_within_test_limit(tmp_path, drivers):
    url, run_id, settings = _open(tmp_path, 40)
    apps = [SlowQuad() for _ in range(drivers)]
    # the same seed: every driver proposes the same configurations in the same order
    made = [_driver(url, run_id, settings, TinyRandom(seed=7), f"r{k}", apps[k]) for k in range(drivers)]
    errors: list[BaseException] = []
    threads = [threading.Thread(target=_per_rank, args=(s, m, errors)) for s, m, _ in made]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors, errors
    st = made[0][2]
    rows = st.trials(run_id)
    measured = Counter(r.config_hash for r in rows if not r.duplicate)
    assert max(measured.values()) == 1                          # nothing measured twice
    counts = st.counts(run_id)
    assert counts["unique"] == counts["measured"] == 40          # the run's test_limit, exactly
    assert counts["WAITING"] == counts["RUNNING"] == 0
    assert sum(len(a.seen) for a in apps) == 40                  # the objective ran 40 times in all
    assert counts["duplicates"] > 0                              # the drivers did ask for the same ones
    for search, _, _ in made:
        assert search.status.stop_reason.startswith("test limit reached")
    for _, _, s in made:
        s.close()
