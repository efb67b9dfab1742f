"""Instructions per step, stock vs patched, counted by callgrind.

    python -m chainer_fastpath.bench.instructions NAME [--steps A B]
        [--layouts K] [--mode stock|patched]

Runs the workload under ``valgrind --tool=callgrind`` for A and for B steps
(after a warm-up) in each mode and prints the difference divided by B - A:
the instructions of one step, free of start-up cost and stable on a noisy
machine.

The count of one build is not one number. Every generic attribute access
looks its name up in CPython's type-attribute cache, whose slot is picked
from the type's version tag; each class created before the hot types get
their tags shifts those tags and so which lookups collide (one build's
``add`` step: 29,312 instructions in two layouts, 30,012 in a third). So
each mode runs under K layouts (``_LAYOUT_SHIFTS`` unrelated classes
created before the workload is built) and the median is the figure; compare
builds by their medians, never by one layout.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

from chainer_fastpath.bench.runner import ONE_THREAD

# Numbers of unrelated classes created before anything else: each value is
# one layout of the type-attribute cache.
_LAYOUT_SHIFTS = (0, 7, 23, 3, 12, 31, 17, 5, 29)


def _shift_layout(n):
    """Creates ``n`` classes and gives each its version tag (a lookup does),
    so that every type tagged later gets a tag ``n`` further on."""
    for i in range(n):
        getattr(type('_Layout{}'.format(i), (), {}), '_tag', None)


def _child(mode, name, steps, warmup, shift):
    if mode == 'patched':
        import chainer_fastpath
        chainer_fastpath.enable()
    from chainer_fastpath.bench.workloads import WORKLOADS
    _shift_layout(shift)
    step, _ = WORKLOADS[name][0](seed=0)
    for _ in range(warmup + steps):
        step()


def _count(mode, name, steps, warmup, shift):
    env = dict(os.environ, PYTHONHASHSEED='0', **ONE_THREAD)
    err = subprocess.run(
        ['valgrind', '--tool=callgrind', '--callgrind-out-file=/dev/null',
         sys.executable, '-m', 'chainer_fastpath.bench.instructions',
         '--child', mode, name, '--shift', str(shift),
         '--steps', str(steps), str(steps), '--warmup', str(warmup)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True, check=True).stderr
    return int(re.search(r'I\s+refs:\s+([\d,]+)', err).group(1)
               .replace(',', ''))


def per_step(mode, name, steps, warmup, layouts):
    """Instructions of one step of ``name`` in ``mode``, one figure per
    layout of the type-attribute cache."""
    a, b = steps
    return [(_count(mode, name, b, warmup, shift)
             - _count(mode, name, a, warmup, shift)) / (b - a)
            for shift in _LAYOUT_SHIFTS[:layouts]]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('name')
    p.add_argument('--steps', nargs=2, type=int, default=(100, 1100))
    p.add_argument('--warmup', type=int, default=20)
    p.add_argument('--layouts', type=int, default=5,
                   choices=range(1, len(_LAYOUT_SHIFTS) + 1),
                   metavar='K', help='layouts of the type-attribute cache '
                   'to take the median over (1-{}, default 5)'.format(
                       len(_LAYOUT_SHIFTS)))
    p.add_argument('--mode', choices=('stock', 'patched'),
                   help='count only this mode')
    p.add_argument('--child', metavar='MODE', help=argparse.SUPPRESS)
    p.add_argument('--shift', type=int, default=0, help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        _child(args.child, args.name, args.steps[0], args.warmup, args.shift)
        return 0
    medians = {}
    for mode in (args.mode,) if args.mode else ('stock', 'patched'):
        counts = per_step(mode, args.name, args.steps, args.warmup,
                          args.layouts)
        medians[mode] = statistics.median(counts)
        print('{} {}: median {:,.0f} instructions/step over {} layouts '
              '(min {:,.0f}, max {:,.0f})'.format(
                  args.name, mode, medians[mode], len(counts), min(counts),
                  max(counts)), flush=True)
    if len(medians) == 2:
        print('{}: stock/patched {:.2f}x'.format(
            args.name, medians['stock'] / medians['patched']))
    return 0


if __name__ == '__main__':
    sys.exit(main())
