"""Compiled array functions (``chainer.functions.array``)."""
