#!/usr/bin/env python
#
# Fixture in the style of OpenTuner's examples/py_api/multiple_tuning_runs.py
# (written here): three TuningRunManagers in one process, each with its own
# database (set on args.database after parsing), advanced in turn.
#
import argparse

import opentuner
from opentuner.api import TuningRunManager
from opentuner.measurement.interface import DefaultMeasurementInterface
from opentuner.resultsdb.models import Result
from opentuner.search.manipulator import ConfigurationManipulator
from opentuner.search.manipulator import IntegerParameter


def make_func(shift):
    return lambda cfg: (cfg['x'] + shift) * (cfg['x'] + shift)


def create_test_tuning_run(db):
    parser = argparse.ArgumentParser(parents=opentuner.argparsers())
    args = parser.parse_args()
    args.database = db
    manipulator = ConfigurationManipulator()
    manipulator.add_parameter(IntegerParameter('x', -200, 200))
    interface = DefaultMeasurementInterface(args=args, manipulator=manipulator, project_name='examples',
                                            program_name='api_test', program_version='0.1')
    return TuningRunManager(interface, args)


def main():
    apis = [create_test_tuning_run('sqlite:///a.db'),
            create_test_tuning_run('sqlite:///b.db'),
            create_test_tuning_run('sqlite:///c.db')]
    funcs = [make_func(-10), make_func(10), make_func(20)]
    for _ in range(40):
        for api, func in zip(apis, funcs):
            desired_result = api.get_next_desired_result()
            if desired_result is None:
                continue
            api.report_result(desired_result, Result(time=func(desired_result.configuration.data)))
    best_cfgs = [api.get_best_configuration() for api in apis]
    for api in apis:
        api.finish()
    print('best x configs: {}'.format(best_cfgs))


if __name__ == '__main__':
    main()
