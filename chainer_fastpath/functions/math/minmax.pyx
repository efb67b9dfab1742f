# cython: boundscheck=True, wraparound=True
"""Compiled ``Max``, ``Min``, ``ArgMax`` and ``ArgMin``: forwards on NumPy
arrays, and the backwards of ``Max`` and ``Min``."""
import numpy

import chainer
import chainer.functions
import chainer.utils
from chainer.functions.array import broadcast, reshape
from chainer.functions.math import basic_math, minmax

from chainer_fastpath._core._attrs cimport retain_inputs, retain_outputs
from chainer_fastpath._core._broadcast_views cimport broadcast_to
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet2, quiet_begin, quiet_end
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._reductions cimport index_middle, select_middle
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, Compiled, compiled, forward_t)
from chainer_fastpath._core._retained cimport (
    array_of, retained_inputs, retained_output)

cdef type _ndarray = numpy.ndarray
cdef object _asarray = numpy.asarray
cdef object _np_equal = numpy.equal
cdef object _np_multiply = numpy.multiply
cdef object _utils = chainer.utils
cdef object _int32 = numpy.int32
# numpy.amax and amin on an ndarray: the ufunc's reduce, with the axis and
# keepdims they are given.
cdef object _max_reduce = numpy.maximum.reduce
cdef object _min_reduce = numpy.minimum.reduce


cdef object _select(object node, tuple inputs, bint largest):
    # SelectorBase.forward: retain x and y, then xp.asarray(_fwd(x, xp)).
    axis = node.axis
    keepdims = node.keepdims
    if (len(inputs) != 1 or not (axis is None or type(axis) is tuple)
            or not (type(keepdims) is bool or type(keepdims) is int)):
        # Another keepdims (numpy.bool_) may make NumPy warn: from stock's
        # frame in NumPy's Python, not from the caller's.
        return NOT_HANDLED
    retain_inputs(node, (0,))
    retain_outputs(node, (0,))
    y = select_middle(inputs[0], axis, keepdims, largest)
    if y is not None:
        return y,
    cdef int raised
    saved = quiet_begin()
    try:
        y = (_max_reduce if largest else _min_reduce)(
            inputs[0], axis, None, None, keepdims=keepdims)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return _asarray(y),


cdef object _max_forward(object node, tuple inputs, ConfigView config):
    return _select(node, inputs, True)


cdef object _min_forward(object node, tuple inputs, ConfigView config):
    return _select(node, inputs, False)


cdef object _index(object node, tuple inputs, bint largest):
    # IndexSelectorBase.forward: xp.asarray(xp.argmax(x, axis=axis)
    # .astype(numpy.int32)), numpy.argmax being the array's own method.
    axis = node.axis
    if len(inputs) != 1 or not (axis is None or type(axis) is int):
        return NOT_HANDLED
    x = inputs[0]
    i = index_middle(x, axis, largest)
    if i is not None:
        return i,
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


cdef object _select_backward(object func, tuple indexes, tuple grad_outputs):
    # SelectorBase.backward: x and y retained; shape x's with 1 at each
    # reduced axis; cond = (x == y.reshape(shape)); then
    # F.broadcast_to(gy.reshape(shape), cond.shape) * cond, a Mul node of
    # cond cast to gy's dtype: force_array(gy_b * cond), NumPy's multiply
    # in that order (its NaNs), a flag it acts on leaving it to stock.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    xs = retained_inputs(func, [])
    y_node = retained_output(func)
    if gy is None or xs is None or len(xs) != 1 or y_node is None:
        return NOT_HANDLED
    x = xs[0]
    y = array_of(y_node)
    cdef Py_ssize_t i, ndim = x.ndim, size = 1
    axis = func.axis
    if axis is None:
        reduced = range(ndim)
    elif type(axis) is tuple and ndim > 0:
        reduced = []
        for ax in axis:
            if type(ax) is not int or not -ndim <= ax < ndim:
                return NOT_HANDLED
            reduced.append(ax % ndim)
    else:
        return NOT_HANDLED
    dims = x.shape
    shape = tuple([1 if i in reduced else dims[i] for i in range(ndim)])
    for i in range(ndim):
        size *= shape[i]
    if gy.size != size or y.size != size:
        return NOT_HANDLED
    cdef int raised = 0
    cond = quiet2(_np_equal, x, y.reshape(shape), &raised)
    if acts(raised):
        return NOT_HANDLED
    gy = broadcast_to(gy.reshape(shape), cond.shape)
    if type(cond) is _ndarray:
        # gy * cond: a Mul node of cond.astype(gy.dtype).
        gx = quiet2(_np_multiply, gy, cond.astype(gy.dtype, copy=False),
                    &raised)
    else:
        # 0-d: cond is a NumPy scalar, and gy * cond a MulConstant node,
        # whose forward is gy.dtype.type(cond) * gy.
        gx = quiet2(_np_multiply, gy.dtype.type(cond), gy, &raised)
    if acts(raised):
        return NOT_HANDLED
    return (new_grad(_utils.force_array(gx), grad_requires_grad(gy_var)),)


cdef tuple _SELECT_METHODS = ('forward', '_fwd', 'retain_inputs',
                              'retain_outputs')
# What SelectorBase.backward calls: the gradient's and the output's
# reshape, the broadcast, the product with the mask (a Mul node, or for a
# 0-d input a MulConstant node).
cdef tuple _SELECT_CALLEES = (
    (chainer.Variable, 'reshape'),
    (chainer.functions, 'reshape'),
    (reshape, '_count_unknown_dims'),
    (chainer.functions, 'broadcast_to'),
    (chainer.Variable, '__mul__'),
    (basic_math, '_preprocess_rhs'),
    (basic_math, '_preprocess_const'),
    (reshape.Reshape, '__init__'),
    (reshape.Reshape, 'check_type_forward'),
    (reshape.Reshape, 'forward'),
    (broadcast.BroadcastTo, '__init__'),
    (broadcast.BroadcastTo, 'check_type_forward'),
    (broadcast.BroadcastTo, 'forward'),
    (basic_math.Mul, 'check_type_forward'),
    (basic_math.Mul, 'forward'),
    (basic_math.Mul, 'retain_inputs'),
    (basic_math.MulConstant, '__init__'),
    (basic_math.MulConstant, 'check_type_forward'),
    (basic_math.MulConstant, 'forward'))


cdef Compiled _selector(type cls, forward_t forward):
    # The type check read (it reads ``axis``) is the base class's.
    return compiled(cls, forward, _SELECT_METHODS, _select_backward,
                    _SELECT_CALLEES, ('axis',), NULL, -1,
                    ('backward', 'get_retained_inputs',
                     'get_retained_outputs'), minmax.SelectorBase)


ENTRIES = (
    _selector(minmax.Max, _max_forward),
    _selector(minmax.Min, _min_forward),
    _forward_only(minmax.ArgMax, _argmax_forward, ('forward', '_fwd'),
                  minmax.IndexSelectorBase),
    _forward_only(minmax.ArgMin, _argmin_forward, ('forward', '_fwd'),
                  minmax.IndexSelectorBase),
)
