# cython: boundscheck=True, wraparound=True
"""Gradients of sums that several function families compute: the
gradient of a ``Sum`` or ``Mean`` spread back over the input's shape
(``spread_grad``), and ``F.sum_to`` of a gradient (``sum_to_grad``: the
backwards of ``BroadcastTo``, the broadcasting ``basic_math`` nodes and
``MatMul``)."""
import numpy

import chainer
from chainer.functions.array import broadcast

from chainer_fastpath._core._apply cimport apply_detached
from chainer_fastpath._core import _attrs
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, get_site)
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._grads cimport (
    grad_raw, grad_requires_grad, new_grad)
from chainer_fastpath._core._reductions cimport sum_middle
from chainer_fastpath._core._registry cimport NOT_HANDLED

cfp_attr_enable(_attrs.FAST)

cdef object _utils = chainer.utils
cdef object _stock_sum_to = chainer.utils.sum_to
cdef type _ndarray = numpy.ndarray
cdef cfp_attr _get_axis = get_site('axis')
cdef cfp_attr _get_keepdims = get_site('keepdims')


cdef object spread_grad(object func, object gy_var, object gy):
    """What ``Sum.backward`` does with gradient ``gy_var`` (array ``gy``)
    of ``func``, a Sum or Mean node: reshape to keep the reduced axes, then
    broadcast_to the input's shape; NOT_HANDLED where gy is not of the
    reduction's shape."""
    shape = func.inputs[0].shape
    cdef Py_ssize_t ndim = len(shape)
    axis = get(func, &_get_axis)
    if not (ndim == 0 or axis is None or get(func, &_get_keepdims)):
        # The summed axes put back: a Reshape node to a list, which no
        # shape equals; its type check passes where gy has the sum's
        # shape.
        axes = sorted([a if a >= 0 else a + ndim for a in axis])
        kept = list(shape)
        for a in reversed(axes):
            del kept[a]
        if list(gy.shape) != kept:
            return NOT_HANDLED
        kept = list(gy.shape)
        for a in axes:
            kept.insert(a, 1)
        gy_var = new_grad(gy.reshape(kept), grad_requires_grad(gy_var))
        gy = grad_raw(gy_var)
    if gy.shape == shape:
        return (gy_var,)
    return apply_detached(broadcast.BroadcastTo(shape), (gy,),
                          grad_requires_grad(gy_var))


cdef object sum_to_grad(object gy_var, object gy, object shape):
    """``F.sum_to(gy_var, shape)`` for gradient ``gy_var`` (array ``gy``):
    gy_var itself where the shapes are equal, else a SumTo node (no type
    check of its own) whose forward is ``utils.sum_to``, a NumPy sum;
    NOT_HANDLED where NumPy would act on a floating-point exception of
    that sum."""
    if gy.shape == shape:
        return gy_var
    if _utils.sum_to is _stock_sum_to:
        gx = _sum_to_one_axis(gy, shape)
        if gx is not None:
            return new_grad(gx, grad_requires_grad(gy_var))
    cdef int raised
    saved = quiet_begin()
    try:
        gx = _utils.sum_to(gy, shape)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return new_grad(gx, grad_requires_grad(gy_var))


cdef object _sum_to_one_axis(object x, object shape):
    # utils.sum_to(x, shape) where it sums over one axis only and
    # sum_middle takes that sum: x.sum((k,), keepdims=True), then squeezed
    # to a view of it where k leads (shape has fewer axes than x). None,
    # nothing done, elsewhere.
    if type(x) is not _ndarray or type(shape) is not tuple:
        return None
    cdef Py_ssize_t lead = x.ndim - len(<tuple>shape), i
    if lead < 0 or lead > 1:
        return None
    axis = 0 if lead else None
    for i in range(len(<tuple>shape)):
        if (<tuple>shape)[i] == 1:
            if axis is not None:
                return None
            axis = i
    if axis is None:
        return None
    y = sum_middle(x, axis, True)
    if y is None or not lead:
        return y
    return y.squeeze((0,))
