#!/usr/bin/env python
#
# Fixture in the style of OpenTuner's examples/py_api/api_example.py (written
# here): the program owns the loop, asks TuningRunManager for configurations,
# measures them itself and reports Results.
#
import argparse
import logging

import opentuner
from opentuner.api import TuningRunManager
from opentuner.measurement.interface import DefaultMeasurementInterface
from opentuner.resultsdb.models import Result
from opentuner.search.manipulator import ConfigurationManipulator
from opentuner.search.manipulator import IntegerParameter

log = logging.getLogger(__name__)


def test_func(cfg):
    x = cfg['x']
    return (x - 10) * (x - 10)


def main():
    parser = argparse.ArgumentParser(parents=opentuner.argparsers())
    args = parser.parse_args()
    manipulator = ConfigurationManipulator()
    manipulator.add_parameter(IntegerParameter('x', -200, 200))
    interface = DefaultMeasurementInterface(args=args, manipulator=manipulator, project_name='examples',
                                            program_name='api_test', program_version='0.1')
    api = TuningRunManager(interface, args)
    for _ in range(60):
        desired_result = api.get_next_desired_result()
        if desired_result is None:
            break
        cfg = desired_result.configuration.data
        api.report_result(desired_result, Result(time=test_func(cfg)))
    best_cfg = api.get_best_configuration()
    api.finish()
    print('best x found was', best_cfg['x'])


if __name__ == '__main__':
    main()
