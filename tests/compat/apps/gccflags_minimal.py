#!/usr/bin/env python
#
# Fixture in the style of OpenTuner's examples/gccflags/gccflags_minimal.py
# (written here): an -O level, on/off/default EnumParameters for -f flags,
# IntegerParameters for --param values, compile(cfg, id) + run_precompiled(...)
# + compile_and_run. Run it from programs/.
#
import opentuner
from opentuner import ConfigurationManipulator
from opentuner import EnumParameter
from opentuner import IntegerParameter
from opentuner import MeasurementInterface
from opentuner import Result

GCC_FLAGS = [
    'unroll-loops', 'inline-functions', 'tree-vectorize', 'omit-frame-pointer',
    'peel-loops', 'strict-aliasing', 'tree-loop-distribution', 'ipa-cp-clone',
]

# (name, min, max)
GCC_PARAMS = [
    ('max-unroll-times', 1, 16),
    ('max-inline-insns-auto', 5, 200),
    ('max-completely-peel-times', 1, 32),
]


class GccFlagsTuner(MeasurementInterface):

    def manipulator(self):
        manipulator = ConfigurationManipulator()
        manipulator.add_parameter(IntegerParameter('opt_level', 0, 3))
        for flag in GCC_FLAGS:
            manipulator.add_parameter(EnumParameter(flag, ['on', 'off', 'default']))
        for param, min, max in GCC_PARAMS:
            manipulator.add_parameter(IntegerParameter(param, min, max))
        return manipulator

    def compile(self, cfg, id):
        gcc_cmd = 'g++ kernel.cpp -o ./tmp{0}.bin'.format(id)
        gcc_cmd += ' -O{0}'.format(cfg['opt_level'])
        for flag in GCC_FLAGS:
            if cfg[flag] == 'on':
                gcc_cmd += ' -f{0}'.format(flag)
            elif cfg[flag] == 'off':
                gcc_cmd += ' -fno-{0}'.format(flag)
        for param, min, max in GCC_PARAMS:
            gcc_cmd += ' --param {0}={1}'.format(param, cfg[param])
        return self.call_program(gcc_cmd)

    def run_precompiled(self, desired_result, input, limit, compile_result, id):
        assert compile_result['returncode'] == 0, compile_result['stderr']
        try:
            run_result = self.call_program('./tmp{0}.bin'.format(id))
            assert run_result['returncode'] == 0
        finally:
            self.call_program('rm ./tmp{0}.bin'.format(id))
        return Result(time=run_result['time'])

    def compile_and_run(self, desired_result, input, limit):
        cfg = desired_result.configuration.data
        compile_result = self.compile(cfg, 0)
        return self.run_precompiled(desired_result, input, limit, compile_result, 0)


if __name__ == '__main__':
    argparser = opentuner.default_argparser()
    GccFlagsTuner.main(argparser.parse_args())
