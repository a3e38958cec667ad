#!/usr/bin/env python
#
# Fixture: an app that imports a part of OpenTuner the compatibility layer does
# not provide (OpenTuner's own technique module); it must be refused at start-up.
#
import opentuner
from opentuner import ConfigurationManipulator, IntegerParameter, MeasurementInterface, Result
from opentuner.search.bandittechniques import AUCBanditMetaTechnique  # noqa: F401


class Never(MeasurementInterface):
    def manipulator(self):
        m = ConfigurationManipulator()
        m.add_parameter(IntegerParameter('x', 0, 9))
        return m

    def run(self, desired_result, input, limit):
        with open('measured.txt', 'a') as fh:
            fh.write('measured\n')
        return Result(time=1.0)


if __name__ == '__main__':
    Never.main(opentuner.default_argparser().parse_args())
