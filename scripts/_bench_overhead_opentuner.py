"""OpenTuner 0.8.8 side of scripts/bench_overhead.py; runs in .bench/opentuner-venv.

A standard OpenTuner app (MeasurementInterface + ``main``) over the same space
and trivial objective as our side, with OpenTuner's default technique and a
SQLite file database. Prints {"wall": s, "cpu": s, "objective": s, "measured": n} for
the ``main()`` call (imports excluded). Must not import our packages.
"""

import argparse
import json
import logging
import sys
import time


def main():
    logging.disable(logging.CRITICAL)
    import opentuner
    from opentuner import (
        ConfigurationManipulator,
        IntegerParameter,
        MeasurementInterface,
        Result,
    )

    parser = argparse.ArgumentParser(parents=opentuner.argparsers())
    parser.add_argument("--dims", type=int, default=4)
    args = parser.parse_args(sys.argv[1:])
    stats = {"objective": 0.0, "measured": 0}

    class Trivial(MeasurementInterface):
        def manipulator(self):
            m = ConfigurationManipulator()
            for i in range(args.dims):
                m.add_parameter(IntegerParameter(f"p{i}", 0, 99))
            return m

        def run(self, desired_result, input, limit):
            t0 = time.perf_counter()
            cfg = desired_result.configuration.data
            value = float(sum((cfg[f"p{i}"] - 37) ** 2 for i in range(args.dims))) + 1.0
            stats["measured"] += 1
            stats["objective"] += time.perf_counter() - t0
            return Result(time=value)

        def save_final_config(self, configuration):
            pass

    t0, c0 = time.perf_counter(), time.process_time()
    Trivial.main(args)
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    json.dump({"wall": wall, "cpu": cpu, **stats}, sys.stdout)


if __name__ == "__main__":
    main()
