"""A short data-parallel Trainer run under ``mpiexec -n 2`` with
``MultiNodeBatchNormalization`` in the model and
``create_multi_node_evaluator`` as an extension, stock vs patched.

Parameters, BatchNormalization statistics, every reported observation and
the evaluator's aggregated results must be bitwise identical stock vs
patched, and identical on every rank.
"""
import tempfile

import numpy

import chainer
import chainer.functions as F
import chainer.links as L
from chainer import training
from chainer.training import extensions

import mpi_common
from mpi_common import chainermn

ITERATIONS = 20


class BNNet(chainer.Chain):
    def __init__(self, comm):
        super(BNNet, self).__init__()
        with self.init_scope():
            self.l1 = L.Linear(12, 16)
            self.bn = chainermn.links.MultiNodeBatchNormalization(16, comm)
            self.l2 = L.Linear(16, 5)

    def forward(self, x):
        return self.l2(F.relu(self.bn(self.l1(x))))


class Record(chainer.training.Extension):
    """Keeps a copy of every iteration's observation."""
    trigger = 1, 'iteration'
    priority = chainer.training.PRIORITY_READER

    def __init__(self):
        self.log = []

    def __call__(self, trainer):
        self.log.append({k: numpy.array(chainer.backend.CpuDevice().send(
            getattr(v, 'array', v))) for k, v in trainer.observation.items()})


def train(comm):
    model = L.Classifier(BNNet(comm))
    optimizer = chainermn.create_multi_node_optimizer(
        chainer.optimizers.Adam(), comm)
    optimizer.setup(model)
    train_it = chainer.iterators.SerialIterator(
        mpi_common.scattered_classification(comm, 64, 12, 5, seed=2), 4)
    test_it = chainer.iterators.SerialIterator(
        mpi_common.scattered_classification(comm, 24, 12, 5, seed=3), 4,
        repeat=False, shuffle=False)
    updater = training.updaters.StandardUpdater(train_it, optimizer)
    record = Record()
    with tempfile.TemporaryDirectory() as out:
        trainer = training.Trainer(updater, (ITERATIONS, 'iteration'), out)
        evaluator = chainermn.create_multi_node_evaluator(
            extensions.Evaluator(test_it, model), comm)
        trainer.extend(evaluator, trigger=(10, 'iteration'))
        trainer.extend(record)
        trainer.run()
    test_it.reset()
    final = chainermn.create_multi_node_evaluator(
        extensions.Evaluator(test_it, model), comm)()
    return {'params': mpi_common.snapshot(model), 'log': record.log,
            'final': {k: numpy.asarray(v) for k, v in final.items()}}


def main():
    comm = mpi_common.communicator()
    stock, patched, stats = mpi_common.run_stock_and_patched(
        lambda: train(comm))
    case = 'evaluator-mnbn'
    mpi_common.differential.assert_same(stock, patched, case)
    mpi_common.assert_same_on_all_ranks(
        comm, {'params': patched['params'], 'final': patched['final']}, case)
    evaluated = [k for k in patched['log'][-1] if k.startswith('validation')]
    if not evaluated:
        raise AssertionError('the evaluator reported nothing')
    mpi_common.assert_fast_paths_taken(
        stats, ('FunctionNode.apply', 'Variable.backward',
                'GradientMethod.update'))
    mpi_common.passed(comm, case, evaluated=sorted(evaluated),
                      fallbacks=mpi_common.fallbacks(stats))


if __name__ == '__main__':
    main()
