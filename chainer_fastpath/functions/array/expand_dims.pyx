# cython: boundscheck=True, wraparound=True
"""Compiled ``ExpandDims``: forward and backward on NumPy arrays."""
import numpy

import chainer.functions
from chainer.functions.array import expand_dims
from chainer.functions.array import reshape

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath.functions.array.reshape cimport reshape_grad

cdef object _expand_dims = numpy.expand_dims


cdef object _forward(object node, tuple inputs, ConfigView config):
    # ExpandDims.forward.
    if len(inputs) != 1:
        return NOT_HANDLED
    return _expand_dims(inputs[0], node.axis),


ENTRIES = (
    compiled(expand_dims.ExpandDims, _forward, ('forward',),
             reshape_grad, backward_callees=(
                 (chainer.functions, 'reshape'),
                 (reshape.Reshape, '__init__'),
                 (reshape.Reshape, 'check_type_forward'),
                 (reshape.Reshape, 'forward'),
                 (reshape, '_count_unknown_dims')),
             type_check=('axis',)),
)
