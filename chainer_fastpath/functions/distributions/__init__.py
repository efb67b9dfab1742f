"""Compiled nodes of Chainer's distributions (``chainer.distributions``)."""
