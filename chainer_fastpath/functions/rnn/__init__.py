"""Compiled rnn functions (``chainer.functions.rnn``)."""
