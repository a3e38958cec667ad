#!/usr/bin/env python
#
# Fixture in the style of OpenTuner's examples/tutorials/mmm_tuner.py (written
# here): one IntegerParameter, compile and run with call_program, save the final
# configuration with manipulator().save_to_file. Run it from programs/.
#
import opentuner
from opentuner import ConfigurationManipulator
from opentuner import IntegerParameter
from opentuner import MeasurementInterface
from opentuner import Result


class GccFlagsTuner(MeasurementInterface):

    def manipulator(self):
        manipulator = ConfigurationManipulator()
        manipulator.add_parameter(IntegerParameter('BLOCK_SIZE', 1, 10))
        return manipulator

    def run(self, desired_result, input, limit):
        cfg = desired_result.configuration.data
        gcc_cmd = 'g++ mmm_block.cpp '
        gcc_cmd += ' -D{0}={1}'.format('BLOCK_SIZE', cfg['BLOCK_SIZE'])
        gcc_cmd += ' -o ./tmp.bin'
        compile_result = self.call_program(gcc_cmd)
        assert compile_result['returncode'] == 0
        run_result = self.call_program('./tmp.bin')
        assert run_result['returncode'] == 0
        return Result(time=run_result['time'])

    def save_final_config(self, configuration):
        print("Optimal block size written to mmm_final_config.json:", configuration.data)
        self.manipulator().save_to_file(configuration.data, 'mmm_final_config.json')


if __name__ == '__main__':
    argparser = opentuner.default_argparser()
    GccFlagsTuner.main(argparser.parse_args())
