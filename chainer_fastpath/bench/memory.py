"""Memory, stock vs patched: bytes allocated by a backward, and leaks.

    python -m chainer_fastpath.bench.memory [--forward-calls N]
                                            [--backward-calls N]

Each figure comes from its own process per mode, as in ``bench``:

* LSTM(32) over 20 steps, batch 1: the bytes tracemalloc sees allocated
  (peak above the level at the start) during ``loss.backward()``;
* leak check: the resident set size after a warm-up and after N more
  forward calls (``F.relu(F.linear(x, W, b))``, a graph recorded and
  dropped each time) and N more forward+backward steps of a small MLP.
"""
import argparse
import json
import os
import resource
import subprocess
import sys
import tracemalloc

import numpy

from chainer_fastpath.bench.runner import MODES, ONE_THREAD


def _rss_kib():
    with open('/proc/self/statm') as f:
        pages = int(f.read().split()[1])
    return pages * resource.getpagesize() // 1024


def _lstm_backward_bytes():
    import chainer.functions as F
    import chainer.links as L
    rng = numpy.random.RandomState(0)
    lstm = L.LSTM(32, 32)
    xs = [rng.randn(1, 32).astype(numpy.float32) for _ in range(20)]
    peaks = []
    for _ in range(5):
        lstm.cleargrads()
        lstm.reset_state()
        loss = 0
        for x in xs:
            loss += F.sum(lstm(x))
        tracemalloc.start()
        start, _ = tracemalloc.get_traced_memory()
        loss.backward()
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
        peaks.append(peak - start)
    return sorted(peaks)[len(peaks) // 2]


def _forward_leak(calls):
    import chainer
    import chainer.functions as F
    rng = numpy.random.RandomState(0)
    x = rng.randn(1, 32).astype(numpy.float32)
    W = chainer.Parameter(rng.randn(32, 32).astype(numpy.float32))
    b = chainer.Parameter(numpy.zeros(32, numpy.float32))
    for _ in range(10000):
        F.relu(F.linear(x, W, b))
    before = _rss_kib()
    for _ in range(calls):
        F.relu(F.linear(x, W, b))
    return before, _rss_kib()


def _backward_leak(calls):
    import chainer
    import chainer.functions as F
    import chainer.links as L
    rng = numpy.random.RandomState(0)
    model = chainer.Sequential(L.Linear(32, 32), F.relu, L.Linear(32, 10))
    x = rng.randn(1, 32).astype(numpy.float32)
    t = numpy.array([3], numpy.int32)

    def step():
        model.cleargrads()
        F.softmax_cross_entropy(model(x), t).backward()
    for _ in range(2000):
        step()
    before = _rss_kib()
    for _ in range(calls):
        step()
    return before, _rss_kib()


def _child(mode, forward_calls, backward_calls):
    if mode == 'patched':
        import chainer_fastpath
        chainer_fastpath.enable()
    return {'lstm_backward_bytes': _lstm_backward_bytes(),
            'forward_rss_kib': _forward_leak(forward_calls),
            'backward_rss_kib': _backward_leak(backward_calls)}


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    p.add_argument('--forward-calls', type=int, default=1000000)
    p.add_argument('--backward-calls', type=int, default=100000)
    p.add_argument('--child', metavar='MODE', help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        print(json.dumps(_child(args.child, args.forward_calls,
                                args.backward_calls)))
        return 0
    env = dict(os.environ, CHAINER_FASTPATH='1', **ONE_THREAD)
    res = {}
    for mode in MODES:
        sys.stderr.write('{}...\n'.format(mode))
        out = subprocess.run(
            [sys.executable, '-m', 'chainer_fastpath.bench.memory',
             '--child', mode, '--forward-calls', str(args.forward_calls),
             '--backward-calls', str(args.backward_calls)],
            env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
        res[mode] = json.loads(out.strip().splitlines()[-1])
    print('{:<44} {:>14} {:>14}'.format('', 'stock', 'patched'))
    print('{:<44} {:>14,} {:>14,}'.format(
        'bytes allocated in LSTM-20 backward (peak)',
        res['stock']['lstm_backward_bytes'],
        res['patched']['lstm_backward_bytes']))
    for key, label in (('forward_rss_kib', '{:,} forward calls'.format(
                            args.forward_calls)),
                       ('backward_rss_kib', '{:,} forward+backward'.format(
                           args.backward_calls))):
        cells = ['{:+,} KiB'.format(after - before)
                 for before, after in (res[m][key] for m in MODES)]
        print('{:<44} {:>14} {:>14}'.format('RSS growth, ' + label, *cells))
    return 0


if __name__ == '__main__':
    sys.exit(main())
