# cython: boundscheck=True, wraparound=True
"""Compiled ``BroadcastTo`` and ``Broadcast``: forward and backward on
NumPy arrays."""
import numpy

import chainer
import chainer.functions
from chainer.functions.array import broadcast
from chainer.functions.math import sum as sum_mod

from chainer_fastpath._core._broadcast_views cimport (
    broadcast_arrays, broadcast_to)
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport grad_array
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._runtime._sum_grads cimport sum_to_grad


cdef object _sum_to(object gy_var, object shape):
    # F.sum_to(gy, shape); NOT_HANDLED for a gradient that is not NumPy's.
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    return sum_to_grad(gy_var, gy, shape)


cdef object _broadcast_to_forward(object node, tuple inputs,
                                  ConfigView config):
    # BroadcastTo.forward on NumPy, which has broadcast_to.
    if len(inputs) != 1:
        return NOT_HANDLED
    return broadcast_to(inputs[0], node._shape),


cdef object _broadcast_to_backward(object func, tuple indexes,
                                   tuple grad_outputs):
    # BroadcastTo.backward: F.sum_to(gy, x.shape).
    gx = _sum_to(grad_outputs[0], func.inputs[0].shape)
    if gx is NOT_HANDLED:
        return NOT_HANDLED
    return gx,


cdef object _broadcast_forward(object node, tuple inputs, ConfigView config):
    # Broadcast.forward on NumPy arrays.
    node._xp = numpy
    node._in_shapes = [x.shape for x in inputs]
    node._in_dtypes = [x.dtype for x in inputs]
    return tuple(broadcast_arrays(inputs))


cdef object _broadcast_backward(object func, tuple indexes,
                                tuple grad_outputs):
    # Broadcast.backward: F.sum_to(gy[i], x[i].shape) for each input asked
    # for, None where its output has no gradient.
    inputs = func.inputs
    cdef list ret = []
    for i in indexes:
        gy_var = grad_outputs[i]
        if gy_var is None:
            ret.append(None)
            continue
        gx = _sum_to(gy_var, inputs[i].shape)
        if gx is NOT_HANDLED:
            return NOT_HANDLED
        ret.append(gx)
    return tuple(ret)


cdef tuple _SUM_TO = (
    (chainer.functions, 'sum_to'),
    (sum_mod.SumTo, '__init__'),
    (sum_mod.SumTo, 'check_type_forward'),
    (sum_mod.SumTo, 'forward'),
    (chainer.utils, 'sum_to'))

ENTRIES = (
    compiled(broadcast.BroadcastTo, _broadcast_to_forward, ('forward',),
             _broadcast_to_backward, _SUM_TO, type_check=('_shape',)),
    compiled(broadcast.Broadcast, _broadcast_forward, ('forward',),
             _broadcast_backward, _SUM_TO, type_check=()),
)
