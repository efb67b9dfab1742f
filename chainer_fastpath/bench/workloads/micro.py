"""Per-op micro workloads and the tiny MLP train step."""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.workloads import (
    checksum, import_torch, model_checksum, torch_twin, workload)


@workload('add', 500)
def make_add(seed):
    rng = numpy.random.RandomState(seed)
    a = chainer.Variable(rng.randn(1).astype(numpy.float32))
    b = chainer.Variable(rng.randn(1).astype(numpy.float32))
    out = []

    def step():
        out[:] = [F.add(a, b)]

    return step, lambda: checksum([out[0].array])


@workload('add_nobackprop_x10', 50)
def make_add_nobackprop(seed):
    """Ten ``F.add`` in one ``no_backprop_mode`` block, as inference runs."""
    rng = numpy.random.RandomState(seed)
    a = chainer.Variable(rng.randn(1).astype(numpy.float32))
    b = chainer.Variable(rng.randn(1).astype(numpy.float32))
    out = []

    def step():
        with chainer.no_backprop_mode():
            for _ in range(10):
                out[:] = [F.add(a, b)]

    return step, lambda: checksum([out[0].array])


@workload('linear', 500)
def make_linear(seed):
    rng = numpy.random.RandomState(seed)
    x = chainer.Variable(rng.randn(1, 32).astype(numpy.float32))
    w = chainer.Variable(rng.randn(32, 32).astype(numpy.float32))
    b = chainer.Variable(rng.randn(32).astype(numpy.float32))
    out = []

    def step():
        out[:] = [F.linear(x, w, b)]

    return step, lambda: checksum([out[0].array])


class MLP(chainer.Chain):
    def __init__(self, sizes):
        super().__init__()
        with self.init_scope():
            self.layers = chainer.ChainList(
                *[L.Linear(a, b) for a, b in zip(sizes[:-1], sizes[1:])])

    def forward(self, x):
        h = x
        for i, layer in enumerate(self.layers):
            h = layer(h)
            if i + 1 < len(self.layers):
                h = F.relu(h)
        return h


@workload('mlp_forward', 200)
def make_mlp_forward(seed):
    """Forward of the tiny MLP 32-32-32-10, batch 1, recording the graph."""
    numpy.random.seed(seed)
    model = MLP([32, 32, 32, 10])
    x = numpy.random.RandomState(seed).randn(1, 32).astype(numpy.float32)
    out = []

    def step():
        out[:] = [model(x)]

    return step, lambda: checksum([out[0].array])


@workload('mlp_train', 64)
def make_mlp_train(seed):
    """Tiny MLP 32-32-32-10, batch 1, softmax cross entropy, Adam."""
    numpy.random.seed(seed)
    rng = numpy.random.RandomState(seed)
    model = MLP([32, 32, 32, 10])
    opt = chainer.optimizers.Adam()
    opt.setup(model)
    xs = rng.randn(64, 1, 32).astype(numpy.float32)
    ts = rng.randint(0, 10, size=(64, 1)).astype(numpy.int32)
    state = {'i': 0, 'loss': 0.0}

    def step():
        i = state['i'] % len(xs)
        state['i'] += 1
        model.cleargrads()
        loss = F.softmax_cross_entropy(model(xs[i]), ts[i])
        loss.backward()
        opt.update()
        state['loss'] = float(loss.array)

    return step, lambda: model_checksum(model)


@torch_twin('mlp_train')
def make_mlp_train_torch(seed):
    torch = import_torch()
    torch.manual_seed(seed)
    rng = numpy.random.RandomState(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 32), torch.nn.ReLU(),
        torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    opt = torch.optim.Adam(model.parameters())
    xs = torch.from_numpy(rng.randn(64, 1, 32).astype(numpy.float32))
    ts = torch.from_numpy(rng.randint(0, 10, size=(64, 1)).astype(numpy.int64))
    state = {'i': 0}

    def step():
        i = state['i'] % len(xs)
        state['i'] += 1
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(xs[i]), ts[i])
        loss.backward()
        opt.step()

    return step, lambda: model_checksum(model)
