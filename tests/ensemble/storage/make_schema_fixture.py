"""Write tests/ensemble/storage/data/schema_<revision>.db: a real database of a released schema.

Run once per released schema revision (``python -m tests.ensemble.storage.make_schema_fixture``)
and commit the file; never regenerate an old one, it stands for databases users already have.
"""

from __future__ import annotations

import os
import sys

from ensemble.storage import HEAD_REVISION, NewRequest, Storage, upgrade

DATA = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data")


def main() -> None:
    path = os.path.join(DATA, f"schema_{HEAD_REVISION}.db")
    if os.path.exists(path):
        sys.exit(f"{path} exists; released schema fixtures are never rewritten")
    url = f"sqlite:///{path}"
    upgrade(url)  # through the migrations, as an upgraded user database would be
    s = Storage(url)
    run_id = s.create_run("fixture", app="demo", space_json={"params": [{"name": "x"}]}, space_hash="abc",
                          objective_json={"minimize": "time"}, settings_json={"seed": 1})
    ids = s.add_requests(run_id, [NewRequest(f'{{"x":{i}}}', f"h{i}", "Random", 1.0) for i in range(3)])
    s.claim(run_id, "w", n=2)
    s.finish(ids[0], "w", state="OK", value=1.25, metrics={"regs": 32}, times=[1.2, 1.3], cost=0.5)
    s.finish(ids[1], "w", state="FAILED", value=float("inf"), reason="compile error")
    s.add_requests(run_id, [NewRequest('{"x":0}', "h0", "NelderMead", duplicate=True)])
    s.put_state(run_id, "bandit", {"history": [1, 2]})
    s.close()
    import sqlite3

    con = sqlite3.connect(path)
    con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    con.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal/-shm
    con.close()
    print(path)


if __name__ == "__main__":
    main()
