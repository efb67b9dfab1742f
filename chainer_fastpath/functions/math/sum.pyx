# cython: boundscheck=True, wraparound=True
"""Compiled ``Sum``: backward on NumPy arrays."""
import chainer.functions
from chainer.functions.array import broadcast
from chainer.functions.math import sum as sum_mod

from chainer_fastpath._core._apply cimport apply_detached
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport grad_array


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Sum.backward: reshape to keep the summed axes, then broadcast_to.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    shape = func.inputs[0].shape
    cdef Py_ssize_t ndim = len(shape)
    axis = func.axis
    if not (ndim == 0 or axis is None or func.keepdims):
        return NOT_HANDLED
    if gy.shape == shape:
        return (gy_var,)
    return apply_detached(broadcast.BroadcastTo(shape), (gy,),
                          gy_var._requires_grad)


ENTRIES = (
    compiled(sum_mod.Sum, NULL, (),
             _backward, backward_callees=(
                 (chainer.functions, 'reshape'),
                 (chainer.functions, 'broadcast_to')),
             type_check=('axis',)),
)
