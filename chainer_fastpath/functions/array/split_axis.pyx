# cython: boundscheck=True, wraparound=True
"""Compiled ``SplitAxis``: forward and backward on NumPy arrays."""
import numpy

import chainer.functions
from chainer.functions.array import concat
from chainer.functions.array import split_axis

from chainer_fastpath._core._apply cimport apply_detached
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport grad_array, grad_requires_grad
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled

cdef object _split = numpy.split
cdef object _integer = numpy.integer


cdef object _forward(object node, tuple inputs, ConfigView config):
    # SplitAxis.forward, iDeep unavailable: numpy.split(x, indices or
    # sections, axis), whose array_split takes the views
    # swapaxes(swapaxes(x, axis, 0)[start:stop], axis, 0), the same views
    # as x[..., start:stop, ...]. Integer offsets and sections only; what
    # numpy.split would reject goes to stock, to raise there.
    if len(inputs) != 1 or numpy.split is not _split:
        return NOT_HANDLED
    x = inputs[0]
    axis = node.axis
    if type(axis) is not int:
        return NOT_HANDLED
    cdef Py_ssize_t ndim = x.ndim
    cdef Py_ssize_t ax = axis
    if ax < 0:
        ax += ndim
    if ax < 0 or ax >= ndim:
        return NOT_HANDLED
    n = x.shape[ax]
    cdef list points
    cdef Py_ssize_t i, each, sections
    indices = node.indices
    if indices is not None:
        # array_split: [0] + list(indices) + [n].
        points = [0]
        for p in indices:
            if type(p) is not int and not isinstance(p, _integer):
                return NOT_HANDLED
            points.append(p)
        points.append(n)
    else:
        if type(node.sections) is not int:
            return NOT_HANDLED
        sections = node.sections
        if sections <= 0 or n % sections:
            return NOT_HANDLED
        each = n // sections
        points = [i * each for i in range(sections + 1)]
    node._xp = numpy
    cdef tuple lead = (slice(None),) * ax
    cdef list ret = []
    for i in range(len(points) - 1):
        ret.append(x[lead + (slice(points[i], points[i + 1]),)])
    node._shapes = [r.shape for r in ret]
    return tuple(ret)


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # SplitAxis.backward: F.concat of the gradients, zeros for missing ones.
    dtype = func.inputs[0].dtype
    arrays = []
    cdef bint rg = False
    for gy_var, shape in zip(grad_outputs, func._shapes):
        if gy_var is None:
            arrays.append(func._xp.zeros(shape, dtype=dtype))
            continue
        gy = grad_array(gy_var)
        if gy is None:
            return NOT_HANDLED
        arrays.append(gy)
        if grad_requires_grad(gy_var):
            rg = True
    return (apply_detached(concat.Concat(func.axis), tuple(arrays), rg)[0],)


ENTRIES = (
    compiled(split_axis.SplitAxis,
             _forward, ('forward', 'indices_or_sections'),
             _backward, backward_callees=((chainer.functions, 'concat'),),
             type_check=('axis', 'indices', 'sections')),
)
