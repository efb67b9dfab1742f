"""Compiled noise functions (``chainer.functions.noise``)."""
