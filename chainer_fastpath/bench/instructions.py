"""Instructions per step, stock vs patched, counted by callgrind.

    python -m chainer_fastpath.bench.instructions NAME [--steps A B]

Runs the workload under ``valgrind --tool=callgrind`` for A and for B steps
(after a warm-up) in each mode and prints the difference divided by B - A:
the instructions of one step, free of start-up cost and stable on a noisy
machine.
"""
import argparse
import os
import re
import subprocess
import sys

from chainer_fastpath.bench.runner import ONE_THREAD


def _child(mode, name, steps, warmup):
    if mode == 'patched':
        import chainer_fastpath
        chainer_fastpath.enable()
    from chainer_fastpath.bench.workloads import WORKLOADS
    step, _ = WORKLOADS[name][0](seed=0)
    for _ in range(warmup + steps):
        step()


def _count(mode, name, steps, warmup):
    env = dict(os.environ, PYTHONHASHSEED='0', **ONE_THREAD)
    err = subprocess.run(
        ['valgrind', '--tool=callgrind', '--callgrind-out-file=/dev/null',
         sys.executable, '-m', 'chainer_fastpath.bench.instructions',
         '--child', mode, name,
         '--steps', str(steps), str(steps), '--warmup', str(warmup)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, check=True).stderr
    return int(re.search(r'I\s+refs:\s+([\d,]+)', err).group(1)
               .replace(',', ''))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('name')
    p.add_argument('--steps', nargs=2, type=int, default=(100, 1100))
    p.add_argument('--warmup', type=int, default=20)
    p.add_argument('--child', metavar='MODE', help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args.child, args.name, args.steps[0], args.warmup)
        return 0
    a, b = args.steps
    per_step = {}
    for mode in ('stock', 'patched'):
        per_step[mode] = (_count(mode, args.name, b, args.warmup)
                          - _count(mode, args.name, a, args.warmup)) / (b - a)
    print('{}: stock {:,.0f}  patched {:,.0f}  instructions/step  '
          'ratio {:.2f}x'.format(args.name, per_step['stock'],
                                 per_step['patched'],
                                 per_step['stock'] / per_step['patched']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
