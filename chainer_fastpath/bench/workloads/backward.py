"""Backward workloads: forward + backward of small graphs."""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.workloads import (
    import_torch, params, torch_twin, workload)


@workload('mlp3_fwd_bwd', 100)
def make_mlp3_fwd_bwd(seed):
    """3-layer MLP 32-32-32-10, batch 1: forward, loss, backward."""
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    model = chainer.Sequential(L.Linear(32, 32), F.relu, L.Linear(32, 32),
                               F.relu, L.Linear(32, 10))
    x = rng.randn(1, 32).astype(numpy.float32)
    t = rng.randint(0, 10, 1).astype(numpy.int32)

    def step():
        model.cleargrads()
        loss = F.softmax_cross_entropy(model(x), t)
        loss.backward()

    return step, lambda: params(model, grads=True)


@workload('lstm20_fwd_bwd', 5)
def make_lstm20_fwd_bwd(seed):
    """LSTM(32) over 20 steps, batch 1: forward, loss, backward."""
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    lstm = L.LSTM(32, 32)
    xs = [rng.randn(1, 32).astype(numpy.float32) for _ in range(20)]

    def step():
        lstm.cleargrads()
        lstm.reset_state()
        loss = 0
        for x in xs:
            loss += F.sum(lstm(x))
        loss.backward()

    return step, lambda: params(lstm, grads=True)


@workload('chain1000_fwd_bwd', 3)
def make_chain1000_fwd_bwd(seed):
    """1,000 chained ``h + 1``, forward and backward."""
    rng = numpy.random.RandomState(seed)
    x = chainer.Variable(rng.randn(1).astype(numpy.float32))

    def step():
        x.cleargrad()
        h = x
        for _ in range(1000):
            h = h + 1
        h.grad = numpy.ones_like(h.array)
        h.backward()

    return step, lambda: {'x.grad': x.grad}


@torch_twin('mlp3_fwd_bwd')
def make_mlp3_fwd_bwd_torch(seed):
    torch = import_torch()
    torch.manual_seed(seed)
    rng = numpy.random.RandomState(seed)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 32), torch.nn.ReLU(),
        torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))
    x = torch.from_numpy(rng.randn(1, 32).astype(numpy.float32))
    t = torch.from_numpy(rng.randint(0, 10, 1).astype(numpy.int64))

    def step():
        model.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), t)
        loss.backward()

    return step, lambda: params(model, grads=True)


@torch_twin('lstm20_fwd_bwd')
def make_lstm20_fwd_bwd_torch(seed):
    torch = import_torch()
    torch.manual_seed(seed)
    rng = numpy.random.RandomState(seed)
    cell = torch.nn.LSTMCell(32, 32)
    xs = [torch.from_numpy(rng.randn(1, 32).astype(numpy.float32))
          for _ in range(20)]

    def step():
        cell.zero_grad()
        state = None
        loss = 0
        for x in xs:
            state = cell(x, state)
            loss = loss + state[0].sum()
        loss.backward()

    return step, lambda: params(cell, grads=True)


@torch_twin('chain1000_fwd_bwd')
def make_chain1000_fwd_bwd_torch(seed):
    torch = import_torch()
    rng = numpy.random.RandomState(seed)
    x = torch.tensor(rng.randn(1).astype(numpy.float32), requires_grad=True)

    def step():
        x.grad = None
        h = x
        for _ in range(1000):
            h = h + 1
        h.backward(torch.ones_like(h))

    return step, lambda: {'x.grad': x.grad.numpy()}
