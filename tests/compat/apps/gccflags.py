#!/usr/bin/env python
#
# Fixture in the style of OpenTuner's examples/gccflags/gccflags.py (written
# here): positional source file, compile template and limits as flags, working
# flags found at start-up with call_program, a parameter named '-O', power-of-two
# / log / linear --param values, compile(config_data, result_id) into a per-id
# directory, run_precompiled with a memory limit, cleanup(result_id),
# save_final_config through manipulator().save_to_file, and a prefix_hook that
# only touches the database session under --flags-histogram.
#
import argparse
import json
import os
import shutil
import tempfile

import opentuner
from opentuner.resultsdb.models import Result
from opentuner.search import manipulator

argparser = argparse.ArgumentParser(parents=opentuner.argparsers())
argparser.add_argument('source', help='source file to compile')
argparser.add_argument('--compile-template', default='{cc} {source} -o {output} -lm {flags}',
                       help='command to compile {source} into {output} with {flags}')
argparser.add_argument('--compile-limit', type=float, default=30, help='seconds a compile may take')
argparser.add_argument('--scaler', type=int, default=4, help='how far params may move from their default')
argparser.add_argument('--cc', default='g++', help='g++ or gcc')
argparser.add_argument('--output', default='./tmp.bin', help='temporary binary name')
argparser.add_argument('--memory-limit', default=1024 ** 3, type=int, help='memory limit of the program')
argparser.add_argument('--flags-histogram', action='store_true', help='print a histogram of flags of past runs')

CANDIDATE_FLAGS = ['unroll-loops', 'inline-functions', 'tree-vectorize', 'omit-frame-pointer',
                   'peel-loops', 'no-such-flag-here', 'strict-aliasing', 'tree-loop-distribution']
# name -> (default, kind)
PARAMS = {'max-unroll-times': (8, 'pow2'), 'max-inline-insns-auto': (15, 'log'),
          'max-completely-peel-times': (16, 'linear')}


class GccFlagsTuner(opentuner.measurement.MeasurementInterface):
    def __init__(self, *pargs, **kwargs):
        super(GccFlagsTuner, self).__init__(program_name=args.source, *pargs, **kwargs)
        self.tmp_root = tempfile.mkdtemp(prefix='gccflags-')
        self.cc_flags = [f for f in CANDIDATE_FLAGS if self.check_if_flag_works('-f' + f)]
        self.baseline = self.run_with_flags(['-O2'], None).time

    def check_if_flag_works(self, flag):
        cmd = args.compile_template.format(source=args.source, output=os.path.join(self.tmp_root, 'probe'),
                                           flags=flag, cc=args.cc)
        result = self.call_program(cmd, limit=args.compile_limit)
        return result['returncode'] == 0 and b'warning' not in result['stderr'] \
            and b'unrecognized' not in result['stderr']

    def manipulator(self):
        m = manipulator.ConfigurationManipulator()
        m.add_parameter(manipulator.IntegerParameter('-O', 0, 3))
        for flag in self.cc_flags:
            m.add_parameter(manipulator.EnumParameter(flag, ['on', 'off', 'default']))
        for param, (default, kind) in sorted(PARAMS.items()):
            if kind == 'pow2':
                m.add_parameter(manipulator.PowerOfTwoParameter(param, 1, 32))
            elif kind == 'log':
                m.add_parameter(manipulator.LogIntegerParameter(param, 0, default * args.scaler))
            else:
                m.add_parameter(manipulator.IntegerParameter(param, 0, default * args.scaler))
        return m

    def cfg_to_flags(self, cfg):
        flags = ['-O%d' % cfg['-O']]
        for flag in self.cc_flags:
            if cfg[flag] == 'on':
                flags.append('-f' + flag)
            elif cfg[flag] == 'off':
                flags.append('-fno-' + flag)
        for param in sorted(PARAMS):
            flags.append('--param=%s=%d' % (param, cfg[param]))
        return flags

    def make_command(self, cfg):
        return args.compile_template.format(source=args.source, output=args.output,
                                            flags=' '.join(self.cfg_to_flags(cfg)), cc=args.cc)

    def get_tmpdir(self, result_id):
        return os.path.join(self.tmp_root, str(result_id))

    def cleanup(self, result_id):
        shutil.rmtree(self.get_tmpdir(result_id), ignore_errors=True)

    def compile_and_run(self, desired_result, input, limit):
        compile_result = self.compile(desired_result.configuration.data, 0)
        try:
            return self.run_precompiled(desired_result, input, limit, compile_result, 0)
        finally:
            self.cleanup(0)

    def compile(self, config_data, result_id):
        return self.compile_with_flags(self.cfg_to_flags(config_data), result_id)

    def compile_with_flags(self, flags, result_id):
        tmp_dir = self.get_tmpdir(result_id)
        os.makedirs(tmp_dir, exist_ok=True)
        output = os.path.join(tmp_dir, os.path.basename(args.output))
        cmd = args.compile_template.format(source=args.source, output=output, flags=' '.join(flags), cc=args.cc)
        result = self.call_program(cmd, limit=args.compile_limit, memory_limit=args.memory_limit)
        if result['returncode'] != 0:
            return Result(state='ERROR', time=float('inf'))
        return output

    def run_precompiled(self, desired_result, input, limit, compile_result, result_id):
        if isinstance(compile_result, Result):
            return compile_result
        run_result = self.call_program([compile_result], limit=limit, memory_limit=args.memory_limit)
        if run_result['timeout']:
            return Result(state='TIMEOUT', time=float('inf'))
        if run_result['returncode'] != 0:
            return Result(state='ERROR', time=float('inf'))
        return Result(time=run_result['time'])

    def run_with_flags(self, flags, limit):
        return self.run_precompiled(None, None, limit, self.compile_with_flags(flags, 'baseline'), 'baseline')

    def save_final_config(self, configuration):
        print("Best flags written to gccflags_final_config.{json,cmd}")
        self.manipulator().save_to_file(configuration.data, 'gccflags_final_config.json')
        with open('gccflags_final_config.cmd', 'w') as fd:
            fd.write(self.make_command(configuration.data))

    def prefix_hook(self, session):
        if self.args.flags_histogram:
            for tr in session.query(opentuner.resultsdb.models.TuningRun):
                print(json.dumps(tr.final_config.data))


if __name__ == '__main__':
    args = argparser.parse_args()
    GccFlagsTuner.main(args)
