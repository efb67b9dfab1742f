# cython: boundscheck=True, wraparound=True
"""Compiled ``Where``: the forward on NumPy arrays."""
import numpy

from chainer.functions.array import where

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled

cdef object _where = numpy.where


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Where.forward: NumPy's where of the node's condition, which raises no
    # floating-point exception; the inputs may broadcast.
    if len(inputs) != 2:
        return NOT_HANDLED
    return _where(node.condition, inputs[0], inputs[1]),


# The check reads the condition's dtype and shape: not cached.
ENTRIES = (
    compiled(where.Where, _forward, ('forward',), NULL, (),
             type_check=None),
)
