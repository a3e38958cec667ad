"""The prediction daemon of Section 5 ("SkelCL stencil programs request workgroup sizes from this daemon").

``ensemble-tuner serve-wg`` runs :class:`PredictionService`: an HTTP server
bound to 127.0.0.1 only (it has no authentication, so it must not listen on
other interfaces).  JSON in, JSON out:

``POST /predict``::

    {"kernel_source": "<OpenCL C>",            # the stencil kernel (features are extracted here)
     "device": {"max_compute_units": 2, ...},  # apps.workgroup.features.device_features(device)
     "rows": 512, "cols": 512, "dtype": "float",
     "w_max": 1024,                            # W_max(s): min(device max, kernel's CL_KERNEL_WORK_GROUP_SIZE)
     "refused": [[64, 32]]}                    # optional: sizes the program already saw refused
    -> {"id": 7, "wr": 16, "wc": 32, "method": "speedup", "note": ""}

``POST /report``::

    {"id": 7, "wr": 16, "wc": 32, "runtime": 0.00123}   # seconds; or "refused": true
    -> {"stored": true}

``GET /health`` -> ``{"ok": true, "requests": n, "reports": m}``.

Every request is recorded and every report stored as training data in a
SQLite file (``requests`` and ``reports`` tables, stdlib ``sqlite3``: the
service's own small store, not a tuning run).  :func:`export_training` turns
the reports into the extract format of :mod:`apps.workgroup.data`, so they
can be merged with the shipped data and the models retrained.
:class:`WorkgroupClient` is the Python client a program uses.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import json
import sqlite3
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Self

from apps.workgroup.features import FEATURE_NAMES, KernelParseError
from apps.workgroup.predict import predict, scenario_vector
from ensemble.errors import ConfigurationError

__all__ = ["PredictionService", "WorkgroupClient", "export_training"]

_SCHEMA = """
CREATE TABLE IF NOT EXISTS requests (id INTEGER PRIMARY KEY, at REAL, request_json TEXT, features_json TEXT,
                                     wr INTEGER, wc INTEGER, method TEXT, note TEXT);
CREATE TABLE IF NOT EXISTS reports (id INTEGER PRIMARY KEY, request_id INTEGER REFERENCES requests(id), at REAL,
                                    wr INTEGER, wc INTEGER, runtime REAL, refused INTEGER);
"""


class PredictionService:
    """HTTP prediction server on 127.0.0.1 with a SQLite record of requests and reports."""

    def __init__(self, predictor: Any, database: str | Path, *, port: int = 0) -> None:
        self.predictor = predictor
        self.database = str(database)
        self._lock = threading.Lock()
        self._predict_lock = threading.Lock()
        self._db = sqlite3.connect(self.database, check_same_thread=False)
        self._db.executescript(_SCHEMA)
        self._db.commit()
        self.server = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        host, port = self.server.server_address[:2]
        name = host.decode() if isinstance(host, bytes) else str(host)
        return f"http://{name}:{port}"

    # -- the two operations ------------------------------------------------------------
    def handle_predict(self, req: dict[str, Any]) -> dict[str, Any]:
        try:
            source = str(req["kernel_source"])
            device = {k: float(v) for k, v in dict(req["device"]).items()}
            rows, cols, w_max = int(req["rows"]), int(req["cols"]), int(req["w_max"])
            dtype = str(req.get("dtype", "float"))
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"/predict: bad request ({exc!r}); send kernel_source, device, rows, cols, "
                                     "dtype and w_max as documented in apps.workgroup.service") from None
        refused = {(int(a), int(b)) for a, b in req.get("refused", [])}
        with self._predict_lock:   # one prediction at a time: the predictor's Generator is not thread-safe
            p = predict(self.predictor, source, device, rows, cols, dtype, w_max, lambda w: w not in refused)
        try:
            feats = scenario_vector(source, device, rows, cols, dtype)
        except KernelParseError:
            feats = None
        with self._lock:
            cur = self._db.execute(
                "INSERT INTO requests (at, request_json, features_json, wr, wc, method, note) VALUES (?,?,?,?,?,?,?)",
                (time.time(), json.dumps({k: v for k, v in req.items() if k != "kernel_source"}),
                 json.dumps(feats), p.size[0], p.size[1], p.method, p.note))
            self._db.commit()
            rid = int(cur.lastrowid or 0)
        return {"id": rid, "wr": p.size[0], "wc": p.size[1], "method": p.method, "note": p.note}

    def handle_report(self, req: dict[str, Any]) -> dict[str, Any]:
        try:
            rid, wr, wc = int(req["id"]), int(req["wr"]), int(req["wc"])
            refused = bool(req.get("refused", False))
            runtime = None if refused else float(req["runtime"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ConfigurationError(f"/report: bad report ({exc!r}); send id, wr, wc and runtime (seconds) "
                                     "or refused: true") from None
        with self._lock:
            if self._db.execute("SELECT 1 FROM requests WHERE id = ?", (rid,)).fetchone() is None:
                raise ConfigurationError(f"/report: id {rid} was never given out by /predict")
            self._db.execute("INSERT INTO reports (request_id, at, wr, wc, runtime, refused) VALUES (?,?,?,?,?,?)",
                             (rid, time.time(), wr, wc, runtime, int(refused)))
            self._db.commit()
        return {"stored": True}

    def counts(self) -> dict[str, int]:
        with self._lock:
            n = self._db.execute("SELECT COUNT(*) FROM requests").fetchone()[0]
            m = self._db.execute("SELECT COUNT(*) FROM reports").fetchone()[0]
        return {"requests": int(n), "reports": int(m)}

    # -- life cycle ---------------------------------------------------------------------
    def start(self) -> Self:
        self._thread = threading.Thread(target=self.server.serve_forever, name="serve-wg", daemon=True)
        self._thread.start()
        return self

    def serve_forever(self) -> None:
        self.server.serve_forever()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
        with self._lock:
            self._db.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()


def _handler(service: PredictionService) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, fmt: str, *args: Any) -> None:  # quiet: the SQLite record is the log
            pass

        def _send(self, code: int, body: dict[str, Any]) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            if self.path == "/health":
                self._send(200, {"ok": True, **service.counts()})
            else:
                self._send(404, {"error": f"unknown path {self.path}; use /health, POST /predict, POST /report"})

        def do_POST(self) -> None:
            try:
                n = int(self.headers.get("Content-Length", "0"))
                req = json.loads(self.rfile.read(n) or b"{}")
                if self.path == "/predict":
                    self._send(200, service.handle_predict(req))
                elif self.path == "/report":
                    self._send(200, service.handle_report(req))
                else:
                    self._send(404, {"error": f"unknown path {self.path}; use /predict or /report"})
            except (ConfigurationError, json.JSONDecodeError) as exc:
                self._send(400, {"error": str(exc)})

    return Handler


class WorkgroupClient:
    """What a running OpenCL program uses: ask for a size at launch, report the runtime after."""

    def __init__(self, url: str, *, timeout: float = 10.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def _post(self, path: str, body: dict[str, Any]) -> dict[str, Any]:
        req = urllib.request.Request(self.url + path, data=json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:
                return dict(json.loads(resp.read()))
        except urllib.error.HTTPError as exc:
            raise ConfigurationError(f"{path}: {json.loads(exc.read()).get('error', exc)}") from None

    def predict(self, kernel_source: str, device: dict[str, float], rows: int, cols: int, dtype: str,
                w_max: int, refused: list[tuple[int, int]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
        """``device``: ``apps.workgroup.features.device_features(pyopencl_device)``."""
        return self._post("/predict", {"kernel_source": kernel_source, "device": device, "rows": rows,
                                       "cols": cols, "dtype": dtype, "w_max": w_max,
                                       "refused": [list(w) for w in refused]})

    def report(self, request_id: int, wr: int, wc: int, runtime: float | None = None, *,
               refused: bool = False) -> dict[str, Any]:
        body: dict[str, Any] = {"id": request_id, "wr": wr, "wc": wc, "refused": refused}
        if runtime is not None:
            body["runtime"] = runtime
        return self._post("/report", body)


def export_training(database: str | Path, out_dir: str | Path) -> tuple[int, int]:
    """The service's reports as an extract (scenarios.csv.gz + measurements.csv.gz); returns (scenarios, rows).

    A scenario is one distinct feature vector; W_max is the one sent with the request.
    """
    db = sqlite3.connect(str(database))
    rows = db.execute("SELECT r.features_json, r.request_json, p.wr, p.wc, p.runtime, p.refused FROM reports p "
                      "JOIN requests r ON r.id = p.request_id WHERE r.features_json != 'null'").fetchall()
    db.close()
    scen: dict[str, dict[str, Any]] = {}
    meas: list[tuple[str, int, int, str, int]] = []
    for fj, rj, wr, wc, runtime, refused in rows:
        key = "svc:" + hashlib.sha1(fj.encode()).hexdigest()[:12]
        if key not in scen:
            req = json.loads(rj)
            scen[key] = {"scenario": key, "device": "", "kernel": "", "family": "service",
                         "dtype": req.get("dtype", ""), "rows": req["rows"], "cols": req["cols"],
                         "w_max": req["w_max"], **dict(zip(FEATURE_NAMES, json.loads(fj)))}
        meas.append((key, wr, wc, "" if runtime is None else repr(float(runtime)), int(refused)))
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    cols = list(dict.fromkeys(["scenario", "device", "kernel", "family", "dtype", "rows", "cols", "w_max",
                              *FEATURE_NAMES]))
    with gzip.open(out / "scenarios.csv.gz", "wt", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        w.writerows(scen.values())
    with gzip.open(out / "measurements.csv.gz", "wt", newline="") as fh:
        w2 = csv.writer(fh)
        w2.writerow(("scenario", "wr", "wc", "time", "refused"))
        w2.writerows(meas)
    return len(scen), len(meas)
