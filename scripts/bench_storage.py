"""Per-operation cost of the results stores (SQL and in-memory) against hand-written sqlite3 peers.

    python -m scripts.bench_storage [--n 2000] [--postgres URL] [--no-memory]

Each row times one Storage call (one transaction, committed) on a fresh SQLite
file, ``--n`` times, and reports the median and 90th percentile in
microseconds.  Peers, run in the same command on the same machine:

* ``sqlite3 WAL``: the same statements written by hand with the stdlib
  ``sqlite3`` module and the same pragmas: the floor that SQLAlchemy Core
  and our transaction helper add to;
* ``sqlite3 default journal``: the same hand-written statements with SQLite's
  defaults (rollback journal, synchronous=FULL): what a commit per result
  costs without WAL (an fsync or more per commit);
* ``--postgres URL``: the Storage calls on PostgreSQL as well;
* ``MemoryStorage`` (``memory://``, unless ``--no-memory``): the same calls
  on the in-memory store, the floor of the storage interface itself.

The row ``per trial: add_and_claim+finish`` is the search driver's hot path
with one same-thread worker (insert already claimed, then finish).
"""

from __future__ import annotations

import argparse
import os
import platform
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable

from ensemble.storage import NewRequest, Storage, open_storage

Op = Callable[[int], object]


def _timed(fn: Op, n: int) -> list[float]:
    out = []
    for i in range(n):
        t0 = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - t0)
    return out


def _summary(xs: list[float]) -> tuple[float, float]:
    xs = sorted(xs)
    return statistics.median(xs) * 1e6, xs[int(0.9 * (len(xs) - 1))] * 1e6


def bench_storage(url: str, n: int) -> dict[str, list[float]]:
    s = open_storage(url)
    run_id = s.create_run(f"bench-{time.time_ns()}", app="bench", space_json="{}", space_hash="h")
    res: dict[str, list[float]] = {}
    res["add_requests (1)"] = _timed(
        lambda i: s.add_requests(run_id, [NewRequest(f'{{"x":{i}}}', f"h{i}", "Random", 1.0)]), n)
    claims = []
    res["claim (n=1)"] = _timed(lambda i: claims.extend(s.claim(run_id, "w")), n)
    res["heartbeat (1)"] = _timed(lambda i: s.heartbeat([claims[i].request_id], "w"), n)
    res["finish"] = _timed(
        lambda i: s.finish(claims[i].request_id, "w", state="OK", value=float(i), times=[float(i)], cost=0.1), n)
    res["finished_since (last 10)"] = _timed(lambda i: s.finished_since(run_id, claims[-11].request_id), n)
    res["result_for_hash"] = _timed(lambda i: s.result_for_hash(run_id, f"h{i}"), n)
    res["add_requests (duplicate)"] = _timed(
        lambda i: s.add_requests(run_id, [NewRequest(f'{{"x":{i}}}', f"h{i}", "Random", duplicate=True)]), n)
    res["counts"] = _timed(lambda i: s.counts(run_id), max(1, n // 10))
    trial = _timed(lambda i: (s.add_requests(run_id, [NewRequest(f'{{"y":{i}}}', f"y{i}", "Random")]),
                              s.finish(s.claim(run_id, "w")[0].request_id, "w", state="OK", value=1.0)), n)
    res["per trial: add+claim+finish"] = trial

    def same_thread(i: int) -> None:
        _ids, (claim,) = s.add_and_claim(run_id, [NewRequest(f'{{"z":{i}}}', f"z{i}", "Random", 1.0)], "w")
        s.finish(claim.request_id, "w", state="OK", value=1.0, times=[1.0], cost=0.1)

    res["per trial: add_and_claim+finish"] = _timed(same_thread, n)
    s.close()
    return res


def bench_raw_sqlite(path: str, n: int, *, wal: bool) -> dict[str, list[float]]:
    Storage(f"sqlite:///{path}").close()  # same schema and indexes as Storage
    con = sqlite3.connect(path, isolation_level=None)
    if wal:
        con.execute("PRAGMA journal_mode=WAL")
        con.execute("PRAGMA synchronous=NORMAL")
    else:
        con.execute("PRAGMA journal_mode=DELETE")
        con.execute("PRAGMA synchronous=FULL")
    con.execute("PRAGMA foreign_keys=ON")
    now = "strftime('%Y-%m-%d %H:%M:%f000','now')"
    con.execute(f"INSERT INTO runs (name, app, space_json, space_hash, objective_json, settings_json, status, "
                f"created_at, updated_at) VALUES ('b','b','{{}}','h','{{}}','{{}}','created',{now},{now})")
    run_id = con.execute("SELECT id FROM runs WHERE name='b'").fetchone()[0]

    def add(i: int) -> int:
        con.execute("BEGIN IMMEDIATE")
        con.execute("INSERT INTO configurations (run_id, hash, data_json) VALUES (?,?,?) ON CONFLICT DO NOTHING",
                    (run_id, f"h{i}", f'{{"x":{i}}}'))
        cid = con.execute("SELECT id FROM configurations WHERE run_id=? AND hash=?", (run_id, f"h{i}")).fetchone()[0]
        rid = con.execute(f"INSERT INTO requests (run_id, configuration_id, technique, state, duplicate, limit_s, "
                          f"created_at) VALUES (?,?,?,'WAITING',0,1.0,{now}) RETURNING id",
                          (run_id, cid, "Random")).fetchone()[0]
        con.execute("COMMIT")
        return int(rid)

    def claim(i: int) -> list[int]:
        con.execute("BEGIN IMMEDIATE")
        rows = con.execute("SELECT r.id, r.configuration_id, r.limit_s, c.data_json FROM requests r JOIN "
                           "configurations c ON c.id = r.configuration_id WHERE r.run_id=? AND r.state='WAITING' "
                           "ORDER BY r.id LIMIT 1", (run_id,)).fetchall()
        won = [r[0] for r in con.execute(
            f"UPDATE requests SET state='RUNNING', worker='w', claimed_at={now}, heartbeat_at={now} "
            f"WHERE id=? AND state='WAITING' RETURNING id", (rows[0][0],))]
        con.execute("COMMIT")
        return won

    def finish(rid: int) -> None:
        con.execute("BEGIN IMMEDIATE")
        row = con.execute(f"UPDATE requests SET state='OK', finished_at={now} WHERE id=? AND state='RUNNING' "
                          f"AND worker='w' RETURNING run_id, configuration_id", (rid,)).fetchone()
        con.execute(f"INSERT INTO results (request_id, run_id, configuration_id, state, value, metrics_json, "
                    f"times_json, cost, reason, created_at) VALUES (?,?,?,'OK',?,'{{}}','[1.0]',0.1,NULL,{now})",
                    (rid, row[0], row[1], 1.0))
        con.execute("COMMIT")

    res: dict[str, list[float]] = {}
    res["add_requests (1)"] = _timed(add, n)
    claimed: list[int] = []
    res["claim (n=1)"] = _timed(lambda i: claimed.extend(claim(i)), n)
    res["finish"] = _timed(lambda i: finish(claimed[i]), n)
    res["per trial: add+claim+finish"] = _timed(lambda i: (add(n + i), finish(claim(i)[0])), n)
    con.close()
    return res


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=2000, help="calls per operation (default 2000)")
    ap.add_argument("--postgres", metavar="URL", help="also time Storage on this PostgreSQL URL")
    ap.add_argument("--no-memory", action="store_true", help="leave out the in-memory store's column")
    args = ap.parse_args(argv)
    n_raw = max(50, args.n // 10)  # the default-journal peer fsyncs: keep it short
    columns: dict[str, dict[str, list[float]]] = {}
    with tempfile.TemporaryDirectory(dir=os.getcwd()) as tmp:
        columns["Storage SQLite WAL"] = bench_storage(f"sqlite:///{tmp}/storage.db", args.n)
        columns["sqlite3 WAL (hand-written)"] = bench_raw_sqlite(f"{tmp}/raw_wal.db", args.n, wal=True)
        columns[f"sqlite3 default journal (n={n_raw})"] = bench_raw_sqlite(f"{tmp}/raw_del.db", n_raw, wal=False)
    if args.postgres:
        columns["Storage PostgreSQL"] = bench_storage(args.postgres, args.n)
    if not args.no_memory:
        columns["MemoryStorage"] = bench_storage("memory://", args.n)
    print(f"# bench_storage  n={args.n}  {platform.node()}  {platform.processor() or platform.machine()}  "
          f"python {platform.python_version()}  sqlite {sqlite3.sqlite_version}")
    names = list(columns)
    print("| operation | " + " | ".join(f"{c} median us (p90)" for c in names) + " |")
    print("|---" * (len(names) + 1) + "|")
    ops = list(dict.fromkeys(op for col in columns.values() for op in col))
    for op in ops:
        cells = []
        for c in names:
            if op in columns[c]:
                med, p90 = _summary(columns[c][op])
                cells.append(f"{med:.0f} ({p90:.0f})" if med >= 10 else f"{med:.1f} ({p90:.1f})")
            else:
                cells.append("-")
        print(f"| {op} | " + " | ".join(cells) + " |")
    base = statistics.median(columns["Storage SQLite WAL"]["per trial: add+claim+finish"])
    for c in names[1:]:
        if "per trial: add+claim+finish" in columns[c]:
            other = statistics.median(columns[c]["per trial: add+claim+finish"])
            print(f"per-trial ratio {c} / Storage SQLite WAL: {other / base:.3g}")


if __name__ == "__main__":
    main()
