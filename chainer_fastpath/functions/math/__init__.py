"""Compiled math functions (``chainer.functions.math``)."""
