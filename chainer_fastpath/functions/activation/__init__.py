"""Compiled activation functions (``chainer.functions.activation``)."""
