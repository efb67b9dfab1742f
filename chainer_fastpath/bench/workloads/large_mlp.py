"""One large network, where compute dominates and the fast path must cost
nothing: MLP 1024-4096-4096-10, batch 256, MomentumSGD."""
import numpy

import chainer
import chainer.functions as F

from chainer_fastpath.bench.workloads import (
    import_torch, params, torch_twin, workload)
from chainer_fastpath.bench.workloads.micro import MLP

SIZES = [1024, 4096, 4096, 10]
BATCH = 256


def data(seed):
    rng = numpy.random.RandomState(seed)
    return (rng.randn(BATCH, SIZES[0]).astype(numpy.float32),
            rng.randint(0, SIZES[-1], BATCH).astype(numpy.int32))


@workload('large_mlp', 1)
def make_large_mlp(seed):
    """One training step per step: forward, backward, MomentumSGD."""
    numpy.random.seed(seed)
    x, t = data(seed)
    model = MLP(SIZES)
    opt = chainer.optimizers.MomentumSGD()
    opt.setup(model)
    state = {'loss': 0.0}

    def step():
        model.cleargrads()
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()
        opt.update()
        state['loss'] = loss.array

    return step, lambda: dict(params(model), loss=state['loss'])


@torch_twin('large_mlp')
def make_large_mlp_torch(seed):
    torch = import_torch()
    nn = torch.nn
    torch.manual_seed(seed)
    x, t = data(seed)
    x, t = torch.from_numpy(x), torch.from_numpy(t.astype(numpy.int64))
    layers = []
    for a, b in zip(SIZES[:-1], SIZES[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers[:-1])
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step():
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), t).backward()
        opt.step()

    return step, lambda: params(model)
