"""Compiled normalization functions (``chainer.functions.normalization``)."""
