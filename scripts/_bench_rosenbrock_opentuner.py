"""OpenTuner 0.8.8 side of scripts/bench_rosenbrock.py; runs in .bench/opentuner-venv.

Drives OpenTuner's ``TuningRunManager`` API with its default technique
(AUCBanditMetaTechniqueA) on 4-D Rosenbrock over FloatParameters in [-3, 3],
one in-memory SQLite database per seed, ``--no-dups`` so every
``report_result`` is a new configuration.  argv: evaluations, then seeds;
prints {"best": [best value per seed]} on stdout.  Must not import our
packages (they need SQLAlchemy 2; this venv has OpenTuner's old one).
"""

import argparse
import json
import logging
import random
import sys
from concurrent.futures import ProcessPoolExecutor

import numpy as np


def rosenbrock(x):
    x = np.asarray(x, dtype=float)
    return float(np.sum(100.0 * (x[1:] - x[:-1] ** 2) ** 2 + (1.0 - x[:-1]) ** 2))


def run_one(evaluations, seed):
    import opentuner
    from opentuner import ConfigurationManipulator, FloatParameter, Result
    from opentuner.api import TuningRunManager
    from opentuner.measurement.interface import DefaultMeasurementInterface

    logging.disable(logging.CRITICAL)
    random.seed(seed)
    np.random.seed(seed)
    parser = argparse.ArgumentParser(parents=opentuner.argparsers())
    args = parser.parse_args(["--database", "sqlite://", "--no-dups"])
    manipulator = ConfigurationManipulator()
    for i in range(4):
        manipulator.add_parameter(FloatParameter(f"x{i}", -3.0, 3.0))
    interface = DefaultMeasurementInterface(args=args, manipulator=manipulator, project_name="bench_rosenbrock",
                                            program_name="rosenbrock", program_version="0.1")
    api = TuningRunManager(interface, args)
    best = float("inf")
    done = idle = 0
    while done < evaluations and idle < 1000:
        dr = api.get_next_desired_result()
        if dr is None:
            idle += 1
            continue
        idle = 0
        value = rosenbrock([dr.configuration.data[f"x{i}"] for i in range(4)])
        api.report_result(dr, Result(time=value))
        best = min(best, value)
        done += 1
    api.finish()
    return best


def main():
    evaluations = int(sys.argv[1])
    seeds = [int(s) for s in sys.argv[2].split(",")]
    jobs = int(sys.argv[3]) if len(sys.argv) > 3 else 1
    with ProcessPoolExecutor(max_workers=jobs) as pool:
        best = list(pool.map(run_one, [evaluations] * len(seeds), seeds))
    print(json.dumps({"best": best}))


if __name__ == "__main__":
    main()
