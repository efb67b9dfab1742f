"""Compiled loss functions (``chainer.functions.loss``)."""
