"""Per-op micro workloads and the tiny MLP train step."""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.workloads import (
    import_torch, params, torch_twin, workload)


# name -> (op, input shapes): one call of a Chainer function on tiny float32
# Variables, as a small network makes thousands of them. Functions are
# looked up when called, as a program's ``F.add(a, b)`` is: this module may
# be imported before ``chainer_fastpath.enable()`` patches ``F.add``.
OPS = {
    'add': (lambda a, b: F.add(a, b), [(1,), (1,)]),
    'mul': (lambda a, b: a * b, [(1,), (1,)]),
    'linear': (lambda x, W, b: F.linear(x, W, b), [(1, 32), (32, 32), (32,)]),
    'relu': (lambda x: F.relu(x), [(1, 32)]),
    'concat': (lambda a, b: F.concat((a, b)), [(1, 32), (1, 32)]),
    'sum': (lambda x: F.sum(x), [(1, 32)]),
    'getitem': (lambda a: a[0, 4:12], [(4, 32)]),
}


def _register_op(name, op, shapes):
    def inputs(seed):
        rng = numpy.random.RandomState(seed)
        return [chainer.Variable(rng.randn(*shape).astype(numpy.float32))
                for shape in shapes]

    @workload(name, 300)
    def make(seed):
        """One call, recording the graph."""
        xs = inputs(seed)
        out = []

        def step():
            out[:] = [op(*xs)]

        return step, lambda: {'out': out[0].array}

    @workload(name + '_nobackprop_x10', 30)
    def make_nobackprop(seed):
        """Ten calls in one ``no_backprop_mode`` block, as inference runs."""
        xs = inputs(seed)
        out = []

        def step():
            with chainer.no_backprop_mode():
                for _ in range(10):
                    out[:] = [op(*xs)]

        return step, lambda: {'out': out[0].array}


for _name, (_op, _shapes) in OPS.items():
    _register_op(_name, _op, _shapes)


# name -> the same op in PyTorch, given the torch module.
TORCH_OPS = {
    'add': lambda torch: torch.add,
    'mul': lambda torch: torch.mul,
    'linear': lambda torch: torch.nn.functional.linear,
    'relu': lambda torch: torch.relu,
    'concat': lambda torch: (lambda a, b: torch.cat((a, b), dim=1)),
    'sum': lambda torch: torch.sum,
    'getitem': lambda torch: (lambda a: a[0, 4:12]),
}


def _register_torch_op(name, make_op, shapes):
    def inputs(torch, seed):
        rng = numpy.random.RandomState(seed)
        return [torch.tensor(rng.randn(*shape).astype(numpy.float32),
                             requires_grad=True) for shape in shapes]

    @torch_twin(name)
    def make(seed):
        torch = import_torch()
        op = make_op(torch)
        xs = inputs(torch, seed)
        out = []

        def step():
            out[:] = [op(*xs)]

        return step, lambda: {'out': out[0].detach().numpy()}

    @torch_twin(name + '_nobackprop_x10')
    def make_nobackprop(seed):
        torch = import_torch()
        op = make_op(torch)
        xs = inputs(torch, seed)
        out = []

        def step():
            with torch.no_grad():
                for _ in range(10):
                    out[:] = [op(*xs)]

        return step, lambda: {'out': out[0].detach().numpy()}


for _name, _make_op in TORCH_OPS.items():
    _register_torch_op(_name, _make_op, OPS[_name][1])


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

    return step, lambda: {'out': out[0].array}


@torch_twin('mlp_forward')
def make_mlp_forward_torch(seed):
    torch = import_torch()
    torch.manual_seed(seed)
    model = _torch_mlp(torch)
    x = torch.from_numpy(
        numpy.random.RandomState(seed).randn(1, 32).astype(numpy.float32))
    out = []

    def step():
        out[:] = [model(x)]

    return step, lambda: {'out': out[0].detach().numpy()}


def _torch_mlp(torch):
    return torch.nn.Sequential(
        torch.nn.Linear(32, 32), torch.nn.ReLU(),
        torch.nn.Linear(32, 32), torch.nn.ReLU(), torch.nn.Linear(32, 10))


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
        state['loss'] = loss.array

    return step, lambda: dict(params(model), loss=state['loss'])


@torch_twin('mlp_train')
def make_mlp_train_torch(seed):
    torch = import_torch()
    torch.manual_seed(seed)
    rng = numpy.random.RandomState(seed)
    model = _torch_mlp(torch)
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

    return step, lambda: params(model)
