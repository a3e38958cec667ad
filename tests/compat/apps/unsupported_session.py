#!/usr/bin/env python
#
# Fixture: an app whose prefix_hook queries OpenTuner's results database session
# (not provided here); it must be refused before any measurement.
#
import opentuner
from opentuner import ConfigurationManipulator, IntegerParameter, MeasurementInterface, Result


class PastRuns(MeasurementInterface):
    def manipulator(self):
        m = ConfigurationManipulator()
        m.add_parameter(IntegerParameter('x', 0, 9))
        return m

    def prefix_hook(self, session):
        print(session.query(opentuner.resultsdb.models.TuningRun).count())

    def run(self, desired_result, input, limit):
        with open('measured.txt', 'a') as fh:
            fh.write('measured\n')
        return Result(time=1.0)


if __name__ == '__main__':
    PastRuns.main(opentuner.default_argparser().parse_args())
