# cython: boundscheck=True, wraparound=True
"""Compiled ``GetItem``: backward on NumPy arrays."""
from chainer.functions.array import get_item

from chainer_fastpath._core._apply cimport apply_detached
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport grad_array


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # GetItem.backward: GetItemGrad(slices, x.shape).apply((gy,)).
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    return apply_detached(
        get_item.GetItemGrad(func.slices, func.inputs[0].shape), (gy,),
        gy_var._requires_grad)


ENTRIES = (
    compiled(get_item.GetItem, NULL, (), _backward, backward_callees=(),
             type_check=()),
)
