"""Compiled pooling functions (``chainer.functions.pooling``)."""
