#!/usr/bin/env python
#
# Fixture in the style of OpenTuner's examples/tsp/tsp.py (written here): a
# PermutationParameter named 0 over the cities of a distance-matrix file given as
# a positional argument; the tour length is reported as the time.
#
import argparse

import opentuner
from opentuner.measurement import MeasurementInterface
from opentuner.search.manipulator import ConfigurationManipulator, PermutationParameter

parser = argparse.ArgumentParser(parents=opentuner.argparsers())
parser.add_argument('data', help='distance matrix file (one row of integers per city)')


class TSP(MeasurementInterface):
    def __init__(self, args):
        super(TSP, self).__init__(args)
        with open(args.data) as fh:
            self.distance = [[int(v) for v in line.split()] for line in fh if line.strip()]

    def run(self, desired_result, input, limit):
        tour = desired_result.configuration.data[0]
        return opentuner.resultsdb.models.Result(time=self.eval_path(tour))

    def eval_path(self, p):
        return sum(self.distance[p[i]][p[i + 1]] for i in range(len(p) - 1))

    def manipulator(self):
        m = ConfigurationManipulator()
        m.add_parameter(PermutationParameter(0, list(range(len(self.distance)))))
        return m


if __name__ == '__main__':
    args = parser.parse_args()
    TSP.main(args)
