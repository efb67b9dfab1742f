# cython: boundscheck=True, wraparound=True
"""Compiled ``Sum``: forward and backward on NumPy arrays, and ``F.sum``."""
import numpy

import chainer
import chainer.functions
from chainer.functions.array import broadcast
from chainer.functions.array import reshape
from chainer.functions.math import sum as sum_mod

from chainer_fastpath._core import _attrs
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, get_site)
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._audit cimport StockMethods
from chainer_fastpath._core._grads cimport grad_array
from chainer_fastpath._core._objects cimport bare
from chainer_fastpath._core._reductions cimport sum_middle
from chainer_fastpath._core._ufunc_loop cimport Reduction
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._runtime._public cimport Public
from chainer_fastpath._runtime._sum_grads cimport spread_grad

cfp_attr_enable(_attrs.FAST)

cdef type _ndarray = numpy.ndarray
cdef object _asarray = numpy.asarray
# ndarray.sum(axis, keepdims=k) is numpy.core._methods._sum, which calls
# numpy.add.reduce(x, axis, None, None, k) with initial and where at their
# defaults.
cdef object _add_reduce = numpy.add.reduce
cdef Reduction _sum_all = Reduction(numpy.add)
cdef cfp_attr _get_axis = get_site('axis')
cdef cfp_attr _get_keepdims = get_site('keepdims')


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Sum.forward on NumPy: numpy.asarray(x.sum(axis=self.axis,
    # keepdims=self.keepdims)).
    keepdims = get(node, &_get_keepdims)
    if len(inputs) != 1 or not (type(keepdims) is bool
                                or type(keepdims) is int):
        # Another keepdims (numpy.bool_) may make NumPy warn: from stock's
        # frame in numpy/core/_methods.py, not from the caller's.
        return NOT_HANDLED
    x = inputs[0]
    axis = get(node, &_get_axis)
    cdef int raised = 0
    if axis is None and type(keepdims) is bool:
        y = _sum_all.all(x, keepdims, &raised)
        if y is not None:
            return NOT_HANDLED if acts(raised) else (y,)
    elif type(axis) is tuple and len(<tuple>axis) == 1:
        y = sum_middle(x, (<tuple>axis)[0], keepdims)
        if y is not None:
            return y,
    saved = quiet_begin()
    try:
        y = _add_reduce(x, axis, None, None, keepdims)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return _asarray(y),


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Sum.backward.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    return spread_grad(func, gy_var, gy)


# -- F.sum -------------------------------------------------------------------

TARGETS = ((sum_mod, 'sum'), (chainer.functions, 'sum'))

cdef Public _sum = Public('sum.sum', sum_mod, ('x', 'axis', 'keepdims'),
                          (None, False))
cdef type _Sum = sum_mod.Sum
cdef StockMethods _sum_init = StockMethods(_Sum, ('__init__',))


def bind(owner, attribute, original):
    """Keeps stock's ``sum`` to fall back to; returns its replacement."""
    return _sum.bind(sum_, original)


cdef object _node(object cls, object axis, object keepdims):
    """``cls(axis, keepdims)``; for stock's Sum and an axis that is None or
    an int, the instance its ``__init__`` leaves, built here."""
    if (cls is not _Sum or not _sum_init.on_class()
            or not (axis is None or type(axis) is int)):
        return cls(axis, keepdims)
    node = bare(_Sum)
    node.axis = None if axis is None else (axis,)
    node.keepdims = keepdims
    return node


def sum_(*args, **kwargs):
    """Drop-in for ``F.sum``: ``y, = Sum(axis, keepdims).apply((x,))``, the
    class read from its module as stock reads it."""
    cdef tuple values = _sum.arguments(args, kwargs)
    if values is not None:
        x, axis, keepdims = values
        cls = _sum.read_global('Sum')
        if cls is not None:
            y = _sum.apply(_node(cls, axis, keepdims), (x,))
            if y is not None:
                return y
    return _sum.stock(args, kwargs)


ENTRIES = (
    compiled(sum_mod.Sum, _forward, ('forward',),
             _backward, backward_callees=(
                 (chainer.functions, 'reshape'),
                 (chainer.functions, 'broadcast_to'),
                 (reshape.Reshape, '__init__'),
                 (reshape.Reshape, 'check_type_forward'),
                 (reshape.Reshape, 'forward'),
                 (reshape, '_count_unknown_dims'),
                 (broadcast.BroadcastTo, 'check_type_forward'),
                 (broadcast.BroadcastTo, 'forward')),
             type_check=('axis',)),
)
