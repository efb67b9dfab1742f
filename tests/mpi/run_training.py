"""Data-parallel training under ``mpiexec -n 2``, stock vs patched.

An MLP classifier (Adam, ``optimizer.update(lossfun, ...)``) and a small
LSTM language model (MomentumSGD with gradient clipping, truncated BPTT,
``loss.backward(); optimizer.update()``), each through
``create_multi_node_optimizer`` over the 'naive' communicator and
``scatter_dataset``, 50 iterations. Parameters (and optimizer states) must be
bitwise identical stock vs patched, and identical on every rank. The
CuPy-only parts ('flat', double buffering) must fail on CPU as stock does.
"""
import numpy

import chainer
import chainer.functions as F
import chainer.links as L
from chainer.dataset import concat_examples

import mpi_common
from mpi_common import chainermn

ITERATIONS = 50
FAST = ('FunctionNode.apply', 'Variable.backward')


class MLP(chainer.Chain):
    def __init__(self):
        super(MLP, self).__init__()
        with self.init_scope():
            self.l1 = L.Linear(None, 32)       # initialized on first call
            self.l2 = L.Linear(32, 32)
            self.l3 = L.Linear(32, 10)
            self.unused = L.Linear(32, 4)      # no gradient: zero_fill

    def forward(self, x):
        return self.l3(F.relu(self.l2(F.relu(self.l1(x)))))


def optimizer_state(optimizer):
    return {name: dict(param.update_rule.state or {})
            for name, param in sorted(optimizer.target.namedparams())}


def train_mlp(comm, zero_fill):
    model = L.Classifier(MLP())
    optimizer = chainermn.create_multi_node_optimizer(
        chainer.optimizers.Adam(), comm, zero_fill=zero_fill)
    optimizer.setup(model)
    optimizer.add_hook(chainer.optimizer_hooks.WeightDecay(1e-4))
    it = chainer.iterators.SerialIterator(
        mpi_common.scattered_classification(comm, 96, 20, 10, seed=1), 4,
        shuffle=True)
    for _ in range(ITERATIONS):
        x, t = concat_examples(it.next())
        optimizer.update(model, x, t)
    return {'params': mpi_common.snapshot(model),
            'state': optimizer_state(optimizer), 't': optimizer.t}


class LanguageModel(chainer.Chain):
    def __init__(self, vocab=30, units=16):
        super(LanguageModel, self).__init__()
        with self.init_scope():
            self.embed = L.EmbedID(vocab, units)
            self.lstm = L.LSTM(units, units)
            self.out = L.Linear(units, vocab)

    def reset_state(self):
        self.lstm.reset_state()

    def forward(self, x):
        return self.out(F.dropout(self.lstm(self.embed(x)), 0.1))


def train_lstm(comm, bptt=5, batch=3):
    words = None
    if comm.rank == 0:
        words = numpy.random.randint(0, 30, 2000).astype(numpy.int32)
    words = chainermn.scatter_dataset(words, comm)    # contiguous halves
    words = numpy.asarray([words[i] for i in range(len(words))])
    model = LanguageModel()
    optimizer = chainermn.create_multi_node_optimizer(
        chainer.optimizers.MomentumSGD(0.1), comm)
    optimizer.setup(model)
    optimizer.add_hook(chainer.optimizer_hooks.GradientClipping(5.0))
    span = len(words) // batch
    offsets = numpy.arange(batch) * span
    pos = 0
    for _ in range(ITERATIONS):
        loss = 0
        for _ in range(bptt):
            x = words[(offsets + pos) % len(words)]
            t = words[(offsets + pos + 1) % len(words)]
            loss += F.softmax_cross_entropy(model(x), t)
            pos += 1
        model.cleargrads()
        loss.backward()
        loss.unchain_backward()
        optimizer.update()
    return {'params': mpi_common.snapshot(model),
            'state': optimizer_state(optimizer), 't': optimizer.t}


def check(comm, case, fn, rule):
    stock, patched, stats = mpi_common.run_stock_and_patched(fn)
    mpi_common.differential.assert_same(stock, patched, case)
    mpi_common.assert_same_on_all_ranks(comm, patched, case)
    # The multi-node optimizer's whole update runs on the lean loop and the
    # fused kernel: nothing about it needs stock code.
    optimizer_entries = ('GradientMethod.update', 'UpdateRule.update',
                         rule + '.update_core_cpu')
    mpi_common.assert_fast_paths_taken(stats, FAST + optimizer_entries)
    mpi_common.assert_no_fallback(stats, optimizer_entries)
    mpi_common.passed(comm, case, t=patched['t'],
                      fallbacks=mpi_common.fallbacks(stats))


def check_cpu_unsupported(comm):
    """The 'flat' communicator and double buffering need CuPy/NCCL: on CPU
    stock raises, and patched must raise the very same error."""
    cases = {
        'flat': lambda: chainermn.create_communicator('flat'),
        'double_buffering': lambda: chainermn.create_multi_node_optimizer(
            chainer.optimizers.Adam(), comm, double_buffering=True),
    }
    errors = {}
    for name, fn in sorted(cases.items()):
        stock, patched = mpi_common.differential.run_both(
            lambda: mpi_common.raised(fn))
        if stock is None or stock != patched:
            raise AssertionError('{}: stock raised {!r}, patched {!r}'.format(
                name, stock, patched))
        errors[name] = stock[0]
    mpi_common.passed(comm, 'cpu-unsupported', errors=errors)


def main():
    comm = mpi_common.communicator()
    check_cpu_unsupported(comm)
    check(comm, 'mlp-zero-fill', lambda: train_mlp(comm, True), 'AdamRule')
    check(comm, 'mlp-no-zero-fill', lambda: train_mlp(comm, False),
          'AdamRule')
    check(comm, 'lstm-lm', lambda: train_lstm(comm), 'MomentumSGDRule')


if __name__ == '__main__':
    main()
