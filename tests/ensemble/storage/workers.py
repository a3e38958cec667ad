"""Process entry points for the multi-process storage tests (importable by spawned children)."""

from __future__ import annotations

import json
import os
import signal
from typing import Any

from ensemble.storage import Storage


def drain(url: str, run_id: int, worker: str, batch: int, start: Any, out: Any) -> None:
    """Claim and finish requests until none are waiting; report the ids this worker finished."""
    s = Storage(url)
    start.wait()
    done: list[int] = []
    while True:
        claims = s.claim(run_id, worker, n=batch)
        if not claims:
            break
        for c in claims:
            x = json.loads(c.config_json)["x"]
            if not s.finish(c.request_id, worker, state="OK", value=2.0 * x, metrics={"worker": worker}):
                raise AssertionError(f"{worker} lost request {c.request_id} it had claimed")
            done.append(c.request_id)
    s.close()
    out.put((worker, done))


def finish_then_die(url: str, run_id: int, n: int) -> None:
    """Finish ``n`` requests, claim one more (in flight), then SIGKILL ourselves: no cleanup runs."""
    s = Storage(url)
    for _ in range(n):
        (c,) = s.claim(run_id, "doomed")
        s.finish(c.request_id, "doomed", state="OK", value=float(json.loads(c.config_json)["x"]))
    s.claim(run_id, "doomed")
    os.kill(os.getpid(), signal.SIGKILL)


def create_same_run(url: str, start: Any, out: Any) -> None:
    """Race with other processes to create the run "race"; report the id we got back."""
    s = Storage(url)
    start.wait()
    out.put(s.create_run("race", app="demo", space_json="{}", space_hash="same"))
    s.close()


def add_overlapping(url: str, run_id: int, seed: int, start: Any, out: Any) -> None:
    """Submit the same 200 configurations in a seed-dependent order, in batches, as a search driver would."""
    import random

    from ensemble.storage import NewRequest

    order = list(range(200))
    random.Random(seed).shuffle(order)
    s = Storage(url)
    start.wait()
    ids: list[int] = []
    for k in range(0, 200, 50):
        batch = [NewRequest(f'{{"x":{i}}}', f"h{i}", f"T{seed}") for i in order[k:k + 50]]
        ids += s.add_requests(run_id, batch)
    s.close()
    out.put(ids)
