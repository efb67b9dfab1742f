"""Compiled evaluation functions (``chainer.functions.evaluation``)."""
