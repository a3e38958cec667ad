"""OpenTuner 0.8.8 side of scripts/bench_search.py; runs in .bench/opentuner-venv.

Drives OpenTuner's own ``TuningRunManager`` API (get_next_desired_result /
report_result) over the replay table given as JSON (path in argv[1]); prints
{"runs": {technique: [[config values...] per unique evaluation] per seed]}}.

Each parameter is an IntegerParameter over the index of its sorted recorded
values (ordinal, like our Enum index view). OpenTuner answers repeated
configurations from its own database before they reach us, so every
report_result is one unique evaluation. In file mode a configuration outside
the recorded set violates the space's constraint, which OpenTuner cannot
express: it is reported as an ERROR result and NOT counted (our techniques
never propose such configurations; Kernel Tuner does not count them either).
Must not import our packages (they need SQLAlchemy 2).
"""

import argparse
import json
import logging
import random
import sys

import numpy as np


def run_one(spec, table, technique, seed):
    import opentuner
    from opentuner import ConfigurationManipulator, IntegerParameter, Result
    from opentuner.api import TuningRunManager
    from opentuner.measurement.interface import DefaultMeasurementInterface

    random.seed(seed)
    np.random.seed(seed)
    names, values = spec["names"], spec["values"]
    parser = argparse.ArgumentParser(parents=opentuner.argparsers())
    args = parser.parse_args(["--technique", technique, "--database", "sqlite://", "--no-dups"])
    manipulator = ConfigurationManipulator()
    for n in names:
        manipulator.add_parameter(IntegerParameter(n, 0, len(values[n]) - 1))
    interface = DefaultMeasurementInterface(args=args, manipulator=manipulator, project_name="bench_search",
                                            program_name="replay", program_version="0.1")
    api = TuningRunManager(interface, args)
    budget = spec["budget"]
    evaluated = []
    rejected = 0
    idle = 0
    while len(evaluated) < budget and rejected < 100 * budget and idle < 1000:
        dr = api.get_next_desired_result()
        if dr is None:
            idle += 1
            continue
        idle = 0
        cfg = dr.configuration.data
        key = tuple(values[n][int(cfg[n])] for n in names)
        row = table.get(key, "absent")
        if row == "absent":  # file mode: outside the recorded set = constraint violation
            rejected += 1
            api.report_result(dr, Result(state="ERROR", time=float("inf")))
            continue
        value = row
        evaluated.append(list(key))
        if value is None:
            api.report_result(dr, Result(state="ERROR", time=float("inf")))
        else:
            api.report_result(dr, Result(time=-value if spec["maximize"] else value))
    api.finish()
    print(f"seed {seed}: {len(evaluated)} evaluated, {rejected} rejected", file=sys.stderr)
    _save_progress(spec, technique, seed, evaluated)
    return evaluated


def _save_progress(spec, technique, seed, evaluated):
    """One finished seed to the harness's progress folder (``spec["progress"]``), written whole then renamed.

    Why: on a space where OpenTuner needs longer than the harness's
    ``--peer-timeout`` for all seeds, the harness kills it and would lose
    every seed; from this folder it keeps the seeds that finished.
    """
    import os

    folder = spec.get("progress")
    if not folder:
        return
    path = os.path.join(folder, f"{technique}__{seed}.json")
    with open(path + ".tmp", "w") as fh:
        json.dump({"strategy": technique, "seed": seed, "configs": evaluated}, fh)
    os.replace(path + ".tmp", path)


def main():
    logging.disable(logging.CRITICAL)
    with open(sys.argv[1]) as fh:
        spec = json.load(fh)
    table = {tuple(k): v for k, v, _cost in spec["table"]}
    runs, errors = {}, {}
    jobs = max(1, int(spec.get("jobs", 1)))
    for technique in spec["strategies"]:
        try:
            if jobs > 1:  # seeds are independent runs: spread them over processes
                import multiprocessing

                with multiprocessing.get_context("fork").Pool(jobs) as pool:
                    runs[technique] = pool.starmap(run_one, [(spec, table, technique, s) for s in spec["seeds"]])
            else:
                runs[technique] = [run_one(spec, table, technique, s) for s in spec["seeds"]]
        except Exception as exc:  # noqa: BLE001 - report, let the benchmark go on
            errors[technique] = f"{type(exc).__name__}: {exc}"
    json.dump({"runs": runs, "errors": errors}, sys.stdout)


if __name__ == "__main__":
    main()
