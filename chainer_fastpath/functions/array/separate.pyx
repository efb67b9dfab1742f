# cython: boundscheck=True, wraparound=True
"""Compiled ``Separate``: forward and backward on NumPy arrays; the
views and the stacking that ``Stack`` shares."""
import numpy

from chainer.functions.array import separate
from chainer.functions.array import stack

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport zeros_shaped
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled

cdef type _ndarray = numpy.ndarray
cdef object _split = numpy.split
cdef object _squeeze = numpy.squeeze
cdef object _stack = numpy.stack
cdef object _zeros = numpy.zeros
# numpy.concatenate's own C function, which numpy.stack reaches through the
# __array_function__ dispatch that only other array types need.
cdef object _concatenate = getattr(numpy.concatenate, '_implementation',
                                   numpy.concatenate)


cdef tuple views_along(object x, Py_ssize_t axis):
    """``x[:, ..., i, ...]`` (``i`` at ``axis``, which is in range) for each
    ``i``: the views ``numpy.squeeze(numpy.split(x, n, axis)[i], axis)``
    gives, whose array_split takes swapaxes(swapaxes(x, axis, 0)[i:i+1],
    axis, 0) (the same shape, strides and data as x[..., i:i+1, ...]).
    The trailing Ellipsis keeps a 0-d result an array, as squeeze does."""
    cdef tuple lead = (slice(None),) * axis
    cdef Py_ssize_t i, n = x.shape[axis]
    return tuple([x[lead + (i, Ellipsis)] for i in range(n)])


cdef Py_ssize_t int_axis(object axis, Py_ssize_t ndim):
    """``axis`` as an index below ``ndim``, or -1 where it is not a Python
    int or is out of range (what NumPy would reject)."""
    if type(axis) is not int:
        return -1
    cdef Py_ssize_t ax = axis
    if ax < 0:
        ax += ndim
    return ax if 0 <= ax < ndim else -1


cdef object stacked(object arrays, object axis):
    """``numpy.stack(arrays, axis)`` (what ``Stack.forward`` returns) for
    a non-empty sequence of ndarrays of one shape and a Python int axis in
    range, as the concatenation of their views
    ``x[(slice(None),) * axis + (None,)]``; else None (numpy.stack's
    errors are stock's)."""
    if len(arrays) == 0 or numpy.stack is not _stack:
        return None
    shape = arrays[0].shape
    for x in arrays:
        if x.shape != shape:
            return None
    cdef Py_ssize_t ax = int_axis(axis, len(shape) + 1)
    if ax < 0:
        return None
    cdef tuple index = (slice(None),) * ax + (None,)
    return _concatenate([x[index] for x in arrays], ax, None, dtype=None,
                        casting='same_kind')


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Separate.forward: numpy.split(x, x.shape[axis], axis), each piece
    # squeezed; a zero-length axis (which numpy.split rejects) and what the
    # type check would reject go to stock.
    if (len(inputs) != 1 or numpy.split is not _split
            or numpy.squeeze is not _squeeze):
        return NOT_HANDLED
    x = inputs[0]
    cdef Py_ssize_t ax = int_axis(node.axis, x.ndim)
    if ax < 0 or x.shape[ax] == 0:
        return NOT_HANDLED
    node._xp = numpy
    ys = views_along(x, ax)
    node._shape = ys[0].shape
    node._dtype = x.dtype
    return ys


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Separate.backward: the missing gradients as
    # self._xp.zeros(self._shape, dtype=self._dtype), then
    # stack.stack(grads, self.axis): a Stack node, whose check wants one
    # dtype and whose forward is numpy.stack.
    if func._xp is not numpy or numpy.zeros is not _zeros:
        return NOT_HANDLED
    shape = func._shape
    dtype = func._dtype
    arrays = []
    cdef bint rg = False
    for g in grad_outputs:
        if g is None:
            arrays.append(zeros_shaped(dtype, shape))
            continue
        a = grad_array(g)
        if a is None:
            return NOT_HANDLED
        arrays.append(a)
        rg = rg or grad_requires_grad(g)
    for a in arrays:
        if type(a) is not _ndarray or a.dtype != arrays[0].dtype:
            return NOT_HANDLED
    gx = stacked(arrays, func.axis)
    if gx is None:
        return NOT_HANDLED
    return (new_grad(gx, rg),)


ENTRIES = (
    compiled(separate.Separate, _forward, ('forward',),
             _backward, backward_callees=(
                 (stack, 'stack'),
                 (stack.Stack, '__init__'),
                 (stack.Stack, 'check_type_forward'),
                 (stack.Stack, 'forward')),
             type_check=('axis',)),
)
