#!/usr/bin/env python
"""A typical OpenTuner app; only its imports were changed.

Originally::

    import opentuner
    from opentuner import ConfigurationManipulator, EnumParameter, IntegerParameter, MeasurementInterface, Result
    from opentuner.search.manipulator import BooleanParameter, PowerOfTwoParameter, SwitchParameter

The body below is written exactly as for OpenTuner (desired_result.configuration.data,
call_program, save_final_config, main(argparser.parse_args())).
"""

import argparse
import json

from ensemble.compat import opentuner
from ensemble.compat.opentuner import (
    BooleanParameter,
    ConfigurationManipulator,
    EnumParameter,
    IntegerParameter,
    MeasurementInterface,
    PowerOfTwoParameter,
    Result,
    SwitchParameter,
)

argparser = argparse.ArgumentParser(parents=opentuner.argparsers())
argparser.add_argument("--output", default="final_config.json", help="where to save the best configuration")


class ToyTuner(MeasurementInterface):
    def manipulator(self):
        manipulator = ConfigurationManipulator()
        manipulator.add_parameter(IntegerParameter("unroll", 1, 16))
        manipulator.add_parameter(PowerOfTwoParameter("block", 1, 64))
        manipulator.add_parameter(EnumParameter("opt", ["-O0", "-O1", "-O2", "-O3"]))
        manipulator.add_parameter(BooleanParameter("fast_math"))
        manipulator.add_parameter(SwitchParameter("schedule", 3))
        return manipulator

    def run(self, desired_result, input, limit):
        cfg = desired_result.configuration.data
        if cfg["unroll"] == 13:
            return Result(state="ERROR", time=float("inf"))
        run_result = self.call_program("exit 0", limit=limit)
        assert run_result["returncode"] == 0
        cost = abs(cfg["unroll"] - 8) + abs(cfg["block"] - 16) / 4 + ["-O0", "-O1", "-O2", "-O3"].index(cfg["opt"]) * -1
        cost += 0 if cfg["fast_math"] else 0.5
        cost += cfg["schedule"] * 0.25
        return Result(time=10.0 + cost)

    def save_final_config(self, configuration):
        with open(self.args.output, "w") as fh:
            json.dump(configuration.data, fh)


if __name__ == "__main__":
    args = argparser.parse_args()
    ToyTuner.main(args)
