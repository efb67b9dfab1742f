"""Optimizer-only workloads: ``opt.update()`` over fixed gradients.

Adam and MomentumSGD over 20 parameters of 1,000 float32 elements (the
per-parameter overhead) and over one parameter of 10M elements (the
arithmetic). Their PyTorch twins run ``torch.optim.Adam`` and ``SGD`` with
momentum, as constructed by default, on the same shapes.
"""
import functools

import numpy

import chainer
from chainer import optimizers

from chainer_fastpath.bench.workloads import (
    import_torch, params, torch_twin, workload)


def _make(seed, opt, count, size):
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

    return step, lambda: params(link)


@workload('adam_20x1000', 60)
def make_adam_small(seed):
    return _make(seed, optimizers.Adam(), 20, 1000)


@workload('adam_1x10M', 2)
def make_adam_large(seed):
    return _make(seed, optimizers.Adam(), 1, 10 ** 7)


@workload('momentum_sgd_20x1000', 100)
def make_momentum_small(seed):
    return _make(seed, optimizers.MomentumSGD(), 20, 1000)


@workload('momentum_sgd_1x10M', 2)
def make_momentum_large(seed):
    return _make(seed, optimizers.MomentumSGD(), 1, 10 ** 7)


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
