"""Peer side of bench_space: Kernel Tuner 1.5.0 builds a T1 search space.

Runs in the Kernel Tuner venv (see scripts/_peers.py), never imports our
packages.  Reads a list of definition files on stdin (JSON: {"files": [...],
"repeats": R}); for each builds ``kernel_tuner.searchspace.Searchspace`` (its
default python-constraint2 backtracking solver) R times and prints, as JSON,
the median construction seconds and the number of valid configurations.
"""

from __future__ import annotations

import json
import statistics
import sys
import time


def _values(text):
    # the definitions write value lists as small Python expressions
    return list(eval(text, {"__builtins__": {}, "range": range, "list": list}))


def main() -> None:
    from kernel_tuner.searchspace import Searchspace

    req = json.load(sys.stdin)
    out = {}
    for path in req["files"]:
        with open(path) as fh:
            d = json.load(fh)["ConfigurationSpace"]
        tune_params = {p["Name"]: _values(p["Values"]) for p in d["TuningParameters"]}
        restrictions = [c["Expression"] for c in d["Conditions"]]
        times, size = [], None
        for _ in range(req["repeats"]):
            t0 = time.perf_counter()
            ss = Searchspace(tune_params, list(restrictions), 1024)
            times.append(time.perf_counter() - t0)
            size = ss.size
        out[path] = {"median_s": statistics.median(times), "count": size}
    json.dump(out, sys.stdout)


if __name__ == "__main__":
    main()
