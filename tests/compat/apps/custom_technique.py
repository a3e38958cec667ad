#!/usr/bin/env python
#
# Fixture: a user technique written the OpenTuner way (a SequentialSearchTechnique
# whose main_generator yields configurations and reads results after each
# yield), registered with technique.register and picked with --technique.
#
import argparse

import opentuner
from opentuner import ConfigurationManipulator, FloatParameter, MeasurementInterface, Result
from opentuner.search import technique


class CoordinateStep(technique.SequentialSearchTechnique):
    """Move one coordinate at a time by +-step; halve the step when no move helps."""

    def main_generator(self):
        objective = self.objective
        driver = self.driver
        manipulator = self.manipulator
        center = driver.get_configuration(manipulator.random())
        yield center
        step = 0.25
        while step > 1e-4:
            improved = False
            for param in manipulator.parameters(center.data):
                if not param.is_primitive():
                    continue
                for sign in (-1, 1):
                    cfg = manipulator.copy(center.data)
                    param.set_unit_value(cfg, param.get_unit_value(cfg) + sign * step)
                    cand = driver.get_configuration(cfg)
                    yield cand
                    if objective.lt(cand, center):
                        center, improved = cand, True
            if not improved:
                step /= 2.0


technique.register(CoordinateStep(name='CoordinateStep'))

parser = argparse.ArgumentParser(parents=opentuner.argparsers())


class Bowl(MeasurementInterface):
    def manipulator(self):
        m = ConfigurationManipulator()
        m.add_parameter(FloatParameter('x', -4.0, 4.0))
        m.add_parameter(FloatParameter('y', -4.0, 4.0))
        return m

    def run(self, desired_result, input, limit):
        c = desired_result.configuration.data
        return Result(time=(c['x'] - 1.0) ** 2 + (c['y'] + 0.5) ** 2)


if __name__ == '__main__':
    Bowl.main(parser.parse_args())
