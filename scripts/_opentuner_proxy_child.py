"""OpenTuner 0.8.8 side of scripts/_opentuner_proxy.py: its own search, driven over line JSON.

Runs under the interpreter named by ``OPENTUNER_PYTHON`` (with
``OPENTUNER_PYTHONPATH``), never imports our packages (they need SQLAlchemy 2,
OpenTuner 0.8.8 needs SQLAlchemy < 1.4), and uses only the standard library,
numpy and OpenTuner.  The proxy starts it in a temporary working directory
(OpenTuner writes ``opentuner.log`` there) and speaks to it on stdin/stdout,
one JSON object per line:

* first line, proxy -> child: ``{"params": [...], "seed": S, "parallelism": P,
  "technique": NAME or null, "seeds": [[values...], ...]}``; reply
  ``{"ok": true, "opentuner": VERSION, "technique": NAME, "python": VERSION}``
  or ``{"error": TEXT, "kind": "import" | "setup"}``.  Each parameter is
  ``{"name", "kind": "index", "high"}`` (an IntegerParameter 0..high over the
  value indices of a discrete parameter), ``{"name", "kind": "float" |
  "logfloat", "low", "high"}`` or ``{"name", "kind": "perm", "size"}`` (a
  PermutationParameter of the positions 0..size-1).  ``seeds`` become the
  measurement interface's ``seed_configurations()`` (OpenTuner's
  ``--seed-configuration``): OpenTuner requests them in its first generation.
* then, proxy -> child: ``{"tell": [{"id", "state", "time"}], "inject":
  [{"x", "state", "time"}], "ask": N, "wait": bool, "idle": K,
  "parallelism": P}``; reply ``{"proposals": [{"id", "x"}], "nones": K}``
  or ``{"error": TEXT, "kind": "step"}``.  ``parallelism`` is OpenTuner's
  ``--parallelism`` (desired results per generation) from then on.  ``tell`` answers
  desired results handed out before (``report_result``; state ``OK`` with
  its time, or ``ERROR`` / ``TIMEOUT`` with time inf); ``inject`` adds results
  OpenTuner did not ask for (another technique's, the run's seed measured by
  the driver) as ``requestor='seed'`` desired results, as OpenTuner's own
  driver records its seed configurations; ``ask`` takes up to N desired
  results from ``TuningRunManager.get_next_desired_result``.  When it gives
  None (a generation of duplicates only, or techniques waiting for results)
  the child stops at once if it has some proposals or ``wait`` is set, else
  tries up to K more generations; ``nones`` counts the None answers.  ``x``
  lists the values in parameter order.

OpenTuner itself answers configurations it has asked for before from its own
database, so every proposal is new to it.  ``random`` and ``numpy.random``
are seeded from the run seed before OpenTuner is built.  The child exits at
the end of stdin (the proxy closes it, or the proxy's process died).
"""

import argparse
import json
import logging
import os
import random
import sys
import traceback
from datetime import datetime


def _send(out, obj):
    out.write(json.dumps(obj) + "\n")
    out.flush()


def _build(spec):
    """(TuningRunManager, OpenTuner parameter list, technique name) for ``spec``."""
    import numpy as np

    random.seed(spec["seed"])
    np.random.seed(spec["seed"] % (2 ** 32))

    import opentuner
    from opentuner import (
        ConfigurationManipulator,
        FloatParameter,
        IntegerParameter,
        LogFloatParameter,
        PermutationParameter,
    )
    from opentuner.api import TuningRunManager
    from opentuner.measurement.interface import DefaultMeasurementInterface

    params = spec["params"]
    seeds = [_to_cfg(params, x) for x in spec.get("seeds") or []]

    class Interface(DefaultMeasurementInterface):
        def seed_configurations(self):
            return [dict(s) for s in seeds]

    argv = ["--database", "sqlite://", "--no-dups", "--parallelism", str(int(spec["parallelism"]))]
    if spec.get("technique"):
        argv += ["--technique", spec["technique"]]
    args = argparse.ArgumentParser(parents=opentuner.argparsers()).parse_args(argv)
    manipulator = ConfigurationManipulator()
    for p in params:
        if p["kind"] == "index":
            manipulator.add_parameter(IntegerParameter(p["name"], 0, int(p["high"])))
        elif p["kind"] == "float":
            manipulator.add_parameter(FloatParameter(p["name"], float(p["low"]), float(p["high"])))
        elif p["kind"] == "logfloat":
            manipulator.add_parameter(LogFloatParameter(p["name"], float(p["low"]), float(p["high"])))
        elif p["kind"] == "perm":
            manipulator.add_parameter(PermutationParameter(p["name"], list(range(int(p["size"])))))
        else:
            raise ValueError(f"parameter {p['name']!r}: unknown kind {p['kind']!r}")
    interface = Interface(args=args, manipulator=manipulator, project_name="ensemble-tuner",
                          program_name="opentuner-proxy", program_version="0.1")
    api = TuningRunManager(interface, args)
    technique = getattr(api.search_driver.root_technique, "name", None) or ",".join(args.technique or [])
    return api, technique


def _to_cfg(params, x):
    return {p["name"]: (list(v) if p["kind"] == "perm" else v) for p, v in zip(params, x)}


def _from_cfg(params, data):
    out = []
    for p in params:
        v = data[p["name"]]
        if p["kind"] == "index":
            v = int(v)
        elif p["kind"] == "perm":
            v = [int(i) for i in v]
        else:
            v = float(v)
        out.append(v)
    return out


def _result(item):
    from opentuner import Result

    state = item.get("state", "OK")
    t = item.get("time")
    if state == "OK" and t is not None:
        return Result(time=float(t))
    return Result(state="TIMEOUT" if state == "TIMEOUT" else "ERROR", time=float("inf"))


def _inject(api, params, item):
    """A result OpenTuner did not ask for, recorded as its driver records a seed configuration's."""
    from opentuner.resultsdb.models import DesiredResult

    driver = api.search_driver
    config = driver.get_configuration(_to_cfg(params, item["x"]))
    dr = DesiredResult(configuration=config, requestor="seed", generation=driver.generation,
                       request_date=datetime.now(), tuning_run=api.tuning_run, state="RUNNING")
    api.session.add(dr)
    api.session.flush()
    api.report_result(dr, _result(item))


def serve(spec, lines, out):
    try:
        import numpy  # noqa: F401
        import opentuner  # noqa: F401
        import sqlalchemy
    except Exception as exc:  # noqa: BLE001 - reported to the proxy, which names the fix
        _send(out, {"error": f"{type(exc).__name__}: {exc}", "kind": "import", "python": sys.executable,
                    "sys_path": sys.path})
        return 3
    if not sqlalchemy.__version__.startswith(("1.1", "1.2", "1.3", "1.0", "0.")):
        _send(out, {"error": f"SQLAlchemy {sqlalchemy.__version__} found; OpenTuner 0.8.8 needs < 1.4",
                    "kind": "import", "python": sys.executable, "sys_path": sys.path})
        return 3
    try:
        api, technique = _build(spec)
    except Exception:  # noqa: BLE001
        _send(out, {"error": traceback.format_exc(), "kind": "setup"})
        return 4
    try:
        from importlib.metadata import version

        ot_version = version("opentuner")
    except Exception:  # noqa: BLE001 - metadata missing: say so, go on
        ot_version = "unknown"
    _send(out, {"ok": True, "opentuner": ot_version, "technique": technique, "python": sys.version.split()[0]})
    params = spec["params"]
    outstanding = {}
    for line in lines:
        if not line.strip():
            continue
        try:
            msg = json.loads(line)
            if msg.get("parallelism"):
                api.search_driver.args.parallelism = int(msg["parallelism"])
            for item in msg.get("tell", []):
                api.report_result(outstanding.pop(int(item["id"])), _result(item))
            for item in msg.get("inject", []):
                _inject(api, params, item)
            proposals = []
            nones = 0
            ask = int(msg.get("ask", 0))
            while len(proposals) < ask:
                dr = api.get_next_desired_result()
                if dr is None:
                    nones += 1
                    if proposals or msg.get("wait") or nones > int(msg.get("idle", 0)):
                        break
                    continue
                outstanding[int(dr.id)] = dr
                proposals.append({"id": int(dr.id), "x": _from_cfg(params, dr.configuration.data)})
            _send(out, {"proposals": proposals, "nones": nones})
        except Exception:  # noqa: BLE001
            _send(out, {"error": traceback.format_exc(), "kind": "step"})
            return 5
    return 0


def main():
    # the protocol owns the real stdout; anything OpenTuner prints goes to stderr
    out = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    logging.disable(logging.WARNING)
    first = sys.stdin.readline()
    if not first.strip():
        return 0
    return serve(json.loads(first), sys.stdin, out)


if __name__ == "__main__":
    sys.exit(main())
