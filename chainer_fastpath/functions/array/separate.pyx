# cython: boundscheck=True, wraparound=True
"""Compiled ``Separate``: forward on NumPy arrays."""
import numpy

from chainer.functions.array import separate

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled

cdef object _split = numpy.split
cdef object _squeeze = numpy.squeeze


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


ENTRIES = (
    compiled(separate.Separate, _forward, ('forward',), NULL, (),
             type_check=('axis',)),
)
