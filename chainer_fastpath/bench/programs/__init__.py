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
