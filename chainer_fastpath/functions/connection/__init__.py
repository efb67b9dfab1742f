"""Compiled connection functions (``chainer.functions.connection``)."""
