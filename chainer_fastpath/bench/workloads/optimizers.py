"""Optimizer-only workloads: ``opt.update()`` over fixed gradients.

Adam and MomentumSGD over 20 parameters of 1,000 float32 elements (the
per-parameter overhead) and over one parameter of 10M elements (the
arithmetic). With PyTorch importable, ``torch.optim.Adam`` (foreach and
fused) runs on the same shapes beside them.
"""
import numpy

import chainer
from chainer import optimizers

from chainer_fastpath.bench.workloads import checksum, workload

try:
    import torch
except ImportError:    # pragma: no cover - optional
    torch = None


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

    return step, lambda: checksum([p.array for p in link.params()])


@workload('adam_20x1000', 300)
def make_adam_small(seed):
    return _make(seed, optimizers.Adam(), 20, 1000)


@workload('adam_1x10M', 3)
def make_adam_large(seed):
    return _make(seed, optimizers.Adam(), 1, 10 ** 7)


@workload('momentum_sgd_20x1000', 300)
def make_momentum_small(seed):
    return _make(seed, optimizers.MomentumSGD(), 20, 1000)


@workload('momentum_sgd_1x10M', 3)
def make_momentum_large(seed):
    return _make(seed, optimizers.MomentumSGD(), 1, 10 ** 7)


def _make_torch(seed, count, size, **kwargs):
    torch.set_num_threads(1)
    rng = numpy.random.RandomState(seed)
    params = []
    for _ in range(count):
        p = torch.nn.Parameter(torch.from_numpy(
            rng.uniform(-1, 1, size).astype(numpy.float32)))
        p.grad = torch.from_numpy(
            rng.uniform(-1, 1, size).astype(numpy.float32))
        params.append(p)
    opt = torch.optim.Adam(params, **kwargs)

    def step():
        opt.step()

    return step, lambda: checksum([p.detach().numpy() for p in params])


if torch is not None:
    for _count, _size, _tag in ((20, 1000, '20x1000'), (1, 10 ** 7, '1x10M')):
        for _kw, _kind in (({'foreach': True}, 'foreach'),
                           ({'fused': True}, 'fused')):
            def _mk(seed, _count=_count, _size=_size, _kw=_kw):
                return _make_torch(seed, _count, _size, **_kw)
            workload('torch_adam_{}_{}'.format(_kind, _tag),
                     300 if _count > 1 else 3)(_mk)
