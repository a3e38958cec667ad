#!/usr/bin/env python
#
# Fixture in the style of OpenTuner's examples/py_api/custom_metric_example.py
# (written here): maximise an extra attribute ('qps') set with
# Result(...).update_attributes, through MaximizeAttribute.
#
import opentuner
from opentuner import MeasurementInterface
from opentuner import Result
from opentuner.search.manipulator import ConfigurationManipulator, IntegerParameter
from opentuner.search.objective import MaximizeAttribute


class CustomMetricExample(MeasurementInterface):
    def manipulator(self):
        m = ConfigurationManipulator()
        m.add_parameter(IntegerParameter('threads', 1, 8))
        return m

    def objective(self):
        return MaximizeAttribute('qps', missing_value=float('-inf'))

    def compile_and_run(self, desired_result, input, limit):
        threads = desired_result.configuration.data['threads']
        qps = 1000.0 * (1 - 0.1 / max(1, threads)) - 3.0 * (threads - 6) ** 2
        return Result(time=1.0 / qps).update_attributes({'qps': qps, 'threads': threads})

    def save_final_config(self, configuration):
        print("best threads:", configuration.data['threads'])


if __name__ == '__main__':
    argparser = opentuner.default_argparser()
    CustomMetricExample.main(argparser.parse_args())
