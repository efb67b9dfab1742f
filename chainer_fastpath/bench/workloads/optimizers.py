"""Optimizer-only workloads: ``opt.update()`` over fixed gradients.

Adam and MomentumSGD over 20 parameters of 1,000 float32 elements (the
per-parameter overhead), and every built-in rule over one parameter of 10M
elements (the memory traffic). The PyTorch twins of Adam and MomentumSGD
run ``torch.optim.Adam`` and ``SGD`` with momentum, as constructed by
default, on the same shapes.

A 10M row's note compares its step with the time its bytes take at a
measured stream bandwidth (see docs/benchmarks.md).
"""
import functools
import time

import numpy

import chainer
from chainer import optimizers

from chainer_fastpath.bench.workloads import (
    import_torch, params, torch_twin, workload)


def _make(seed, opt, count, size, streams=0):
    """``streams``: the arrays of ``size`` float32 a step reads plus those
    it writes, each once; where given, the workload's note is
    :func:`bandwidth_note`."""
    rng = numpy.random.RandomState(seed)
    link = chainer.Link()
    with link.init_scope():
        for i in range(count):
            p = chainer.Parameter(
                rng.uniform(-1, 1, size).astype(numpy.float32))
            p.grad = rng.uniform(-1, 1, size).astype(numpy.float32)
            setattr(link, 'p%d' % i, p)
    opt.setup(link)

    def step():
        opt.update()

    if not streams:
        return step, lambda: params(link)
    return (step, lambda: params(link),
            lambda: bandwidth_note(step, streams * 4 * size * count))


def _best(fn, repeats):
    best = float('inf')
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best


def bandwidth_note(step, nbytes, repeats=5):
    """``step``'s time against the least time ``nbytes`` of memory traffic
    take at this process's stream bandwidth: that of a NumPy triad
    ``numpy.add(b, c, out=a)`` over 10M float32 (12 bytes an element, the
    write counted once, as STREAM counts), timed in turns with ``step``,
    the best of ``repeats`` each."""
    n = 10 ** 7
    a, b, c = (numpy.ones(n, numpy.float32) for _ in range(3))
    triad = step_time = float('inf')
    for _ in range(repeats):
        triad = min(triad, _best(lambda: numpy.add(b, c, out=a), 1))
        step_time = min(step_time, _best(step, 1))
    bandwidth = 12 * n / triad
    bound = nbytes / bandwidth
    return ('{:.0f} MB a step; triad {:.1f} GB/s; bound {:.1f} ms; '
            'step {:.1f} ms = {:.2f}x bound'.format(
                nbytes / 1e6, bandwidth / 1e9, bound * 1e3,
                step_time * 1e3, step_time / bound))


@workload('adam_20x1000', 60)
def make_adam_small(seed):
    return _make(seed, optimizers.Adam(), 20, 1000)


@workload('adam_1x10M', 2)
def make_adam_large(seed):
    return _make(seed, optimizers.Adam(), 1, 10 ** 7, streams=7)


@workload('momentum_sgd_20x1000', 100)
def make_momentum_small(seed):
    return _make(seed, optimizers.MomentumSGD(), 20, 1000)


@workload('momentum_sgd_1x10M', 2)
def make_momentum_large(seed):
    return _make(seed, optimizers.MomentumSGD(), 1, 10 ** 7, streams=5)


# The other rules over one parameter of 10M float32, with the arrays a step
# reads and writes: the parameter and each state both, the gradient read.
# SMORMS3 reads its three states and writes three new ones.
_LARGE = (
    ('sgd', optimizers.SGD, 3),
    ('corrected_momentum_sgd', optimizers.CorrectedMomentumSGD, 5),
    ('nesterov_ag', optimizers.NesterovAG, 5),
    ('amsgrad', optimizers.AMSGrad, 9),
    ('adamw', functools.partial(optimizers.AdamW, weight_decay_rate=0.01),
     7),
    ('rmsprop', optimizers.RMSprop, 5),
    ('rmsprop_graves', optimizers.RMSpropGraves, 9),
    ('ada_grad', optimizers.AdaGrad, 5),
    ('ada_delta', optimizers.AdaDelta, 7),
    ('smorms3', optimizers.SMORMS3, 9),
    ('msvag', optimizers.MSVAG, 7),
)


def _make_large(seed, optimizer, streams):
    return _make(seed, optimizer(), 1, 10 ** 7, streams=streams)


for _name, _optimizer, _streams in _LARGE:
    workload(_name + '_1x10M', 2)(functools.partial(
        _make_large, optimizer=_optimizer, streams=_streams))


def _make_torch(seed, count, size, optimizer, **kwargs):
    torch = import_torch()
    rng = numpy.random.RandomState(seed)
    tensors = []
    for _ in range(count):
        p = torch.nn.Parameter(torch.from_numpy(
            rng.uniform(-1, 1, size).astype(numpy.float32)))
        p.grad = torch.from_numpy(
            rng.uniform(-1, 1, size).astype(numpy.float32))
        tensors.append(p)
    opt = getattr(torch.optim, optimizer)(tensors, **kwargs)

    def step():
        opt.step()

    return step, lambda: {str(i): p.detach().numpy()
                          for i, p in enumerate(tensors)}


# PyTorch twins with the defaults of the Chainer rules above (Adam's lr is
# Chainer's alpha; MomentumSGD is lr 0.01, momentum 0.9).
for _count, _size, _tag in ((20, 1000, '20x1000'), (1, 10 ** 7, '1x10M')):
    torch_twin('adam_' + _tag)(functools.partial(
        _make_torch, count=_count, size=_size, optimizer='Adam', lr=0.001))
    torch_twin('momentum_sgd_' + _tag)(functools.partial(
        _make_torch, count=_count, size=_size, optimizer='SGD', lr=0.01,
        momentum=0.9))
