# cython: boundscheck=True, wraparound=True
"""Compiled ``Stack``: forward and backward on NumPy arrays."""
import numpy

import chainer.functions
from chainer.functions.array import separate
from chainer.functions.array import stack

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath.functions.array.separate cimport (
    int_axis, stacked, views_along)

cdef object _split = numpy.split
cdef object _squeeze = numpy.squeeze


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Stack.forward: numpy.stack(inputs, axis) (see separate.stacked). No
    # inputs, unequal shapes or an axis out of range (numpy.stack's
    # errors) go to stock.
    y = stacked(inputs, node.axis)
    if y is None:
        return NOT_HANDLED
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Stack.backward: F.separate(gy, axis), a Separate node whose outputs
    # are gy's views along axis (see separate.views_along); what its type
    # check or numpy.split would reject goes to stock.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if (gy is None or numpy.split is not _split
            or numpy.squeeze is not _squeeze):
        return NOT_HANDLED
    cdef Py_ssize_t ax = int_axis(func.axis, gy.ndim)
    if ax < 0 or gy.shape[ax] == 0:
        return NOT_HANDLED
    cdef bint rg = grad_requires_grad(gy_var)
    return tuple([new_grad(view, rg)
                  for view in views_along(gy, ax)])


ENTRIES = (
    compiled(stack.Stack, _forward, ('forward',),
             _backward, backward_callees=(
                 (chainer.functions, 'separate'),
                 (separate.Separate, '__init__'),
                 (separate.Separate, 'check_type_forward'),
                 (separate.Separate, 'forward')),
             type_check=('axis',)),
)
