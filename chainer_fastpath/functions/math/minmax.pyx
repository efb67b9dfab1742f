# cython: boundscheck=True, wraparound=True
"""Compiled ``Max``, ``Min``, ``ArgMax`` and ``ArgMin``: forwards on NumPy
arrays."""
import numpy

from chainer.functions.math import minmax

from chainer_fastpath._core._attrs cimport retain_inputs, retain_outputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, Compiled, compiled, forward_t)

cdef object _asarray = numpy.asarray
cdef object _int32 = numpy.int32
# numpy.amax and amin on an ndarray: the ufunc's reduce, with the axis and
# keepdims they are given.
cdef object _max_reduce = numpy.maximum.reduce
cdef object _min_reduce = numpy.minimum.reduce


cdef object _select(object node, tuple inputs, object reduce):
    # SelectorBase.forward: retain x and y, then xp.asarray(_fwd(x, xp)).
    axis = node.axis
    if (len(inputs) != 1 or not (axis is None or type(axis) is tuple)
            or not (type(node.keepdims) is bool
                    or type(node.keepdims) is int)):
        # Another keepdims (numpy.bool_) may make NumPy warn: from stock's
        # frame in NumPy's Python, not from the caller's.
        return NOT_HANDLED
    retain_inputs(node, (0,))
    retain_outputs(node, (0,))
    cdef int raised
    saved = quiet_begin()
    try:
        y = reduce(inputs[0], axis, None, None, keepdims=node.keepdims)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return _asarray(y),


cdef object _max_forward(object node, tuple inputs, ConfigView config):
    return _select(node, inputs, _max_reduce)


cdef object _min_forward(object node, tuple inputs, ConfigView config):
    return _select(node, inputs, _min_reduce)


cdef object _index(object node, tuple inputs, bint largest):
    # IndexSelectorBase.forward: xp.asarray(xp.argmax(x, axis=axis)
    # .astype(numpy.int32)), numpy.argmax being the array's own method.
    axis = node.axis
    if len(inputs) != 1 or not (axis is None or type(axis) is int):
        return NOT_HANDLED
    x = inputs[0]
    i = x.argmax(axis=axis, out=None) if largest else x.argmin(
        axis=axis, out=None)
    return _asarray(i.astype(_int32)),


cdef object _argmax_forward(object node, tuple inputs, ConfigView config):
    return _index(node, inputs, True)


cdef object _argmin_forward(object node, tuple inputs, ConfigView config):
    return _index(node, inputs, False)


cdef Compiled _forward_only(type cls, forward_t forward, tuple methods,
                            type check_owner):
    # No backward; the type check read (it reads ``axis``) is the base
    # class's.
    return compiled(cls, forward, methods, NULL, (), ('axis',), NULL, -1, (),
                    check_owner)


cdef tuple _SELECT_METHODS = ('forward', '_fwd', 'retain_inputs',
                              'retain_outputs')

ENTRIES = (
    _forward_only(minmax.Max, _max_forward, _SELECT_METHODS,
                  minmax.SelectorBase),
    _forward_only(minmax.Min, _min_forward, _SELECT_METHODS,
                  minmax.SelectorBase),
    _forward_only(minmax.ArgMax, _argmax_forward, ('forward', '_fwd'),
                  minmax.IndexSelectorBase),
    _forward_only(minmax.ArgMin, _argmin_forward, ('forward', '_fwd'),
                  minmax.IndexSelectorBase),
)
