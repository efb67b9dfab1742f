"""An MLP on scikit-learn's digits, trained by ``chainer.training.Trainer``.

One step is a whole small training script: model, iterators, updater,
``Trainer`` with ``Evaluator`` and ``LogReport``, two epochs from the same
seed. The digits (8x8 images, 1,797 of them) ship inside scikit-learn.
"""
import tempfile

import numpy

import chainer
import chainer.links as L
from chainer import training
from chainer.training import extensions

from chainer_fastpath.bench.workloads import Skip, params, workload
from chainer_fastpath.bench.workloads.micro import MLP

EPOCHS = 2
TRAIN = 1437    # the first 80% train, the rest is the test set


def load():
    """Returns ``(train, test)`` as Chainer tuple datasets, pixels in
    [0, 1]; raises :class:`Skip` without scikit-learn."""
    try:
        from sklearn.datasets import load_digits
    except ImportError:
        raise Skip('scikit-learn is not installed')
    digits = load_digits()
    x = (digits.data / 16.0).astype(numpy.float32)
    t = digits.target.astype(numpy.int32)
    return (chainer.datasets.TupleDataset(x[:TRAIN], t[:TRAIN]),
            chainer.datasets.TupleDataset(x[TRAIN:], t[TRAIN:]))


@workload('digits_trainer', 1)
def make_digits_trainer(seed):
    """MLP 64-100-100-10, batch 32, Adam, two epochs with ``Trainer``."""
    train, test = load()
    final = {}

    def step():
        numpy.random.seed(seed)
        model = L.Classifier(MLP([64, 100, 100, 10]))
        optimizer = chainer.optimizers.Adam()
        optimizer.setup(model)
        train_iter = chainer.iterators.SerialIterator(train, 32)
        test_iter = chainer.iterators.SerialIterator(
            test, 100, repeat=False, shuffle=False)
        updater = training.updaters.StandardUpdater(train_iter, optimizer)
        # Nothing is written there (the log stays in memory), but Trainer
        # creates its output directory.
        with tempfile.TemporaryDirectory() as out:
            trainer = training.Trainer(updater, (EPOCHS, 'epoch'), out=out)
            trainer.extend(extensions.Evaluator(test_iter, model))
            log = extensions.LogReport(log_name=None)
            trainer.extend(log)
            trainer.run()
        final.update(log.log[-1], model=model)

    return (step, lambda: dict(params(final['model']),
                               loss=final['validation/main/loss']),
            lambda: 'test accuracy {:.3f} after {} epochs'.format(
                float(final['validation/main/accuracy']), EPOCHS))
