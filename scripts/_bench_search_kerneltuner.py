"""Kernel Tuner 1.5.0 side of scripts/bench_search.py; runs in .bench/kt-venv.

Writes the replay table as a Kernel Tuner cache file (path of the JSON spec in
argv[1]) and runs ``tune_kernel(..., simulation_mode=True)`` with each
strategy and ``max_fevals`` = the budget. Prints
{"runs": {strategy: [[config values...] per unique evaluation] per seed]}}.

Counting: Kernel Tuner's simulation runner counts a configuration against
max_fevals only the first time it is served (its own unique count), so
duplicates are free, as for every tuner in the benchmark. In file mode the
restriction "is a recorded configuration" is passed as a callable, so its
strategies see exactly the recorded set (failed entries included). In grid
mode every grid point is in the cache; absent ones as RuntimeFailedConfig.
Must not import our packages.
"""

import json
import logging
import os
import random
import sys
import tempfile
import warnings

import numpy as np


def write_cache(spec, path):
    names = spec["names"]
    cache = {}
    for key, value, cost in spec["table"]:
        entry = dict(zip(names, key))
        ms = cost * 1000.0
        if value is None:
            entry.update(time="RuntimeFailedConfig", compile_time=ms, verification_time=0, benchmark_time=0)
        else:
            entry.update(time=-value if spec["maximize"] else value, times=[value], compile_time=ms,
                         verification_time=0, benchmark_time=0)
        entry.update(strategy_time=0, framework_time=0, timestamp="2024-01-01 00:00:00+00:00")
        cache[",".join(str(v) for v in key)] = entry
    data = {"version": "1.0", "device_name": "replay", "kernel_name": "replay", "problem_size": [1],
            "tune_params_keys": names, "tune_params": spec["values"], "objective": "time", "cache": cache}
    with open(path, "w") as fh:
        json.dump(data, fh)


def run_one(spec, cachefile, strategy, seed, recorded):
    from kernel_tuner import tune_kernel

    random.seed(seed)
    np.random.seed(seed)
    names = spec["names"]
    options = {"max_fevals": spec["budget"]}
    name = strategy
    if strategy.startswith("pyatf_"):
        name, options["searchtechnique"] = "pyatf_strategies", strategy[len("pyatf_"):]
    restrictions = None
    if spec["mode"] == "file":
        def restrictions(p):
            return tuple(p[n] for n in names) in recorded
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        results, _env = tune_kernel("replay", "__global__ void replay() {}", [1], [], dict(spec["values"]),
                                    restrictions=restrictions, cache=cachefile, simulation_mode=True,
                                    strategy=name, strategy_options=options, quiet=True, lang="CUDA")
    seen, order = set(), []
    for r in results:
        key = tuple(r[n] for n in names)
        if key not in seen:
            seen.add(key)
            order.append(list(key))
    return order[: spec["budget"]]


#: what a forked worker needs (set in main() before the pool starts; fork shares it, nothing is pickled)
_SHARED: dict = {}


def _one_task(task):
    """(strategy, seed) -> (strategy, seed, configs or None, error or None); Kernel Tuner's prints silenced."""
    strategy, seed = task
    with open(os.devnull, "w") as devnull:
        stdout, sys.stdout = sys.stdout, devnull  # Kernel Tuner prints per config
        try:
            return strategy, seed, run_one(_SHARED["spec"], _SHARED["cachefile"], strategy, seed,
                                           _SHARED["recorded"]), None
        except Exception as exc:  # noqa: BLE001 - report, let the benchmark go on
            return strategy, seed, None, f"{type(exc).__name__}: {exc}"
        finally:
            sys.stdout = stdout


def main():
    """Every (strategy, seed) run, in ``spec["jobs"]`` processes (default 1: one after another, as before).

    Each run seeds ``random`` and ``numpy.random`` itself, so the result does not depend on the process it ran in.
    """
    logging.disable(logging.CRITICAL)
    with open(sys.argv[1]) as fh:
        spec = json.load(fh)
    recorded = {tuple(k) for k, _v, _c in spec["table"]}
    jobs = max(1, int(spec.get("jobs", 1)))
    tasks = [(strategy, s) for strategy in spec["strategies"] for s in spec["seeds"]]
    with tempfile.TemporaryDirectory() as tmp:
        cachefile = os.path.join(tmp, "replay_cache.json")
        write_cache(spec, cachefile)
        os.chdir(tmp)  # Kernel Tuner's pyATF bridge writes a cache folder in the working directory
        _SHARED.update(spec=spec, cachefile=cachefile, recorded=recorded)
        if jobs > 1:
            import multiprocessing

            with multiprocessing.get_context("fork").Pool(jobs) as pool:
                done = pool.map(_one_task, tasks, chunksize=1)
        else:
            done = [_one_task(t) for t in tasks]
    runs, errors = {}, {}
    for strategy, _seed, configs, err in done:  # in task order: strategies, then seeds
        if err is not None:
            errors.setdefault(strategy, err)
        elif strategy not in errors:
            runs.setdefault(strategy, []).append(configs)
    for strategy in errors:
        runs.pop(strategy, None)
    json.dump({"runs": runs, "errors": errors}, sys.stdout)


if __name__ == "__main__":
    main()
