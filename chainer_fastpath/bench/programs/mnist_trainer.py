"""MNIST MLP as in Chainer's ``train_mnist.py``: 784-1000-1000-10 with
ReLU, ``L.Classifier``, Adam, a ``Trainer`` with ``Evaluator`` and
``LogReport``, minibatch 100. One step is one epoch over 1,000 training
images, then evaluation on 500."""
import tempfile

import numpy

import chainer
import chainer.functions as F
import chainer.links as L

from chainer_fastpath.bench.programs import teacher_labels, trainer_epoch
from chainer_fastpath.bench.workloads import params, workload

UNITS, BATCH, TRAIN, TEST = 1000, 100, 1000, 500


class MLP(chainer.Chain):
    def __init__(self, n_units, n_out):
        super().__init__()
        with self.init_scope():
            self.l1 = L.Linear(None, n_units)
            self.l2 = L.Linear(None, n_units)
            self.l3 = L.Linear(None, n_out)

    def forward(self, x):
        h1 = F.relu(self.l1(x))
        h2 = F.relu(self.l2(h1))
        return self.l3(h2)


@workload('mnist_trainer', 1, section='programs')
def make(seed):
    rng = numpy.random.RandomState(seed)
    numpy.random.seed(seed)
    x = rng.rand(TRAIN + TEST, 784).astype(numpy.float32)
    t = teacher_labels(rng, x - 0.5, 10)
    train = chainer.datasets.TupleDataset(x[:TRAIN], t[:TRAIN])
    test = chainer.datasets.TupleDataset(x[TRAIN:], t[TRAIN:])
    model = L.Classifier(MLP(UNITS, 10))
    optimizer = chainer.optimizers.Adam()
    optimizer.setup(model)
    out = tempfile.mkdtemp(prefix='cfp-bench-')
    state = {'log': None}

    def step():
        # Iterators in order: the same batches stock and patched.
        state['log'] = trainer_epoch(model, optimizer, train, test, BATCH,
                                     out)

    def result():
        return dict(params(model), **state['log'])

    return step, result
