#!/usr/bin/env python
#
# Fixture in the style of OpenTuner's examples/rosenbrock/rosenbrock.py (written
# here, not copied): parameters named by integers, module-level parser with
# opentuner.argparsers() parents, Result built through opentuner.resultsdb.models.
#
import argparse
import logging

import opentuner
from opentuner.measurement import MeasurementInterface
from opentuner.search.manipulator import ConfigurationManipulator
from opentuner.search.manipulator import FloatParameter

log = logging.getLogger(__name__)

parser = argparse.ArgumentParser(parents=opentuner.argparsers())
parser.add_argument('--dimensions', type=int, default=2, help='number of variables')
parser.add_argument('--domain', type=float, default=1000, help='each variable lies in [-domain, domain]')
parser.add_argument('--function', default='rosenbrock', choices=('rosenbrock', 'sphere', 'beale'),
                    help='test function to minimise')


class Rosenbrock(MeasurementInterface):
    def run(self, desired_result, input, limit):
        cfg = desired_result.configuration.data
        total = 0.0
        if self.args.function == 'rosenbrock':
            for d in range(self.args.dimensions - 1):
                a, b = cfg[d], cfg[d + 1]
                total += 100.0 * (b - a * a) ** 2 + (a - 1) ** 2
        elif self.args.function == 'sphere':
            total = sum(cfg[d] ** 2 for d in range(self.args.dimensions))
        else:
            x, y = cfg[0], cfg[1]
            total = ((1.5 - x + x * y) ** 2 + (2.25 - x + x * y ** 2) ** 2
                     + (2.625 - x + x * y ** 3) ** 2)
        return opentuner.resultsdb.models.Result(time=total)

    def manipulator(self):
        m = ConfigurationManipulator()
        for d in range(self.args.dimensions):
            m.add_parameter(FloatParameter(d, -self.args.domain, self.args.domain))
        return m

    def program_name(self):
        return self.args.function

    def program_version(self):
        return "%dx%d" % (self.args.dimensions, self.args.domain)

    def save_final_config(self, configuration):
        print("Final configuration", configuration.data)


if __name__ == '__main__':
    args = parser.parse_args()
    if args.function == 'beale':
        args.domain = 4.5
        args.dimensions = 2
    Rosenbrock.main(args)
