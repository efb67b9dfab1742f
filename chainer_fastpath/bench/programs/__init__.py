"""Programs: whole training scripts written the way Chainer users write
them (``Trainer`` and extensions, or a hand-written loop), at the sizes the
usual scripts use by default, on synthetic data of the real data's shape.

Each registers with :func:`..workloads.workload` in section ``programs``;
``step()`` is one iteration of the script's training loop (one epoch of a
small dataset where the script drives a ``Trainer``).
"""
import importlib

import numpy

MODULES = ('mnist_trainer', 'ptb_lstm', 'word2vec', 'vae', 'dqn',
           'crf_tagger', 'memnn', 'text_cnn', 'cifar_convnet', 'dcgan',
           'seq2seq', 'rnn_classifier', 'resnet_trainer')


# The entries of a classifier's log that the Trainer programs return.
LOG_KEYS = ('main/loss', 'main/accuracy', 'validation/main/loss',
            'validation/main/accuracy')


def trainer_epoch(model, optimizer, train, test, batch, out, shuffle=False,
                  converter=None, print_report=False):
    """One epoch over ``train`` as a user's script runs it: a
    ``SerialIterator`` (shuffled from ``numpy.random`` or in order), a
    ``StandardUpdater``, a ``Trainer`` with an ``Evaluator`` on ``test``
    (in order), a ``LogReport`` and, with ``print_report``, a
    ``PrintReport`` of the epoch and :data:`LOG_KEYS`; returns the log's
    entry of the epoch as ``{key: array}``."""
    from chainer import iterators, training
    from chainer.training import extensions

    kwargs = {} if converter is None else {'converter': converter}
    train_iter = iterators.SerialIterator(train, batch, shuffle=shuffle)
    test_iter = iterators.SerialIterator(test, batch, repeat=False,
                                         shuffle=False)
    updater = training.updaters.StandardUpdater(train_iter, optimizer,
                                                **kwargs)
    trainer = training.Trainer(updater, (1, 'epoch'), out=out)
    trainer.extend(extensions.Evaluator(test_iter, model, **kwargs))
    log = extensions.LogReport()
    trainer.extend(log)
    if print_report:
        trainer.extend(extensions.PrintReport(('epoch',) + LOG_KEYS))
    trainer.run()
    return {key: numpy.asarray(log.log[-1][key]) for key in LOG_KEYS}


def zipf_tokens(rng, vocab, n):
    """``n`` int32 tokens below ``vocab``, word frequencies roughly as in
    natural text (Zipf, exponent 1.1)."""
    return ((rng.zipf(1.1, n) - 1) % vocab).astype(numpy.int32)


def teacher_labels(rng, x, classes):
    """Labels of a fixed random linear teacher: something to learn."""
    w = rng.standard_normal((x.shape[1], classes)).astype(x.dtype)
    return (x @ w).argmax(axis=1).astype(numpy.int32)


for _module in MODULES:
    importlib.import_module(__name__ + '.' + _module)
