# cython: boundscheck=True, wraparound=True
"""Compiled ``LogSumExp``: forward and backward on NumPy arrays."""
import numpy

import chainer
import chainer.functions
from chainer.functions.array import broadcast
from chainer.functions.array import expand_dims
from chainer.functions.math import basic_math
from chainer.functions.math import exponential
from chainer.functions.math import logsumexp

from chainer_fastpath._core._attrs cimport retain_inputs, retain_outputs
from chainer_fastpath._core._broadcast_views cimport broadcast_to
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._objects cimport node_data
from chainer_fastpath._core._reductions cimport select_middle, sum_middle
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport (
    array_of, requires_grad_of, retained_output)
from chainer_fastpath._core._ufunc_loop cimport multiply_loop, subtract_loop

cdef type _ndarray = numpy.ndarray
cdef object _exp = numpy.exp
cdef object _log = numpy.log
cdef object _asarray = numpy.asarray
cdef object _expand_dims = numpy.expand_dims
cdef object _utils = chainer.utils


cdef object _forward(object node, tuple inputs, ConfigView config):
    # LogSumExp.forward on NumPy arrays.
    if len(inputs) != 1:
        return NOT_HANDLED
    x, = inputs
    axis = node.axis
    cdef int raised, own = 0
    saved = quiet_begin()
    try:
        m = select_middle(x, axis, True, True)
        if m is None:
            m = x.max(axis=axis, keepdims=True)
        y = subtract_loop.call_broadcast(x, m, &own)
        if y is None:
            y = _utils.force_array(x - m)
        _exp(y, out=y)
        y_sum = None
        if type(axis) is tuple and len(<tuple>axis) == 1:
            y_sum = sum_middle(y, (<tuple>axis)[0], False)
        if y_sum is None:
            y_sum = y.sum(axis=axis)
        y = _asarray(_log(y_sum) + m.reshape(y_sum.shape))
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it; the loops called here raised ``own``.
        raised = quiet_end(saved) | own
        if acts(raised):
            return NOT_HANDLED
    retain_inputs(node, (0,))
    retain_outputs(node, (0,))
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # LogSumExp.backward: gy and y given their summed axes back
    # (expand_dims, one ExpandDims node each), broadcast_to x's shape
    # (BroadcastTo nodes, none where the shapes already agree), then
    # gy * exp(x - y): Sub, Exp and Mul nodes, whose type checks pass for
    # one floating dtype, checked here.
    y_node = retained_output(func)
    if y_node is None or func._input_indexes_to_retain != (0,):
        return NOT_HANDLED
    x_node = func.inputs[0]
    if node_data(x_node) is None:
        return NOT_HANDLED
    x = array_of(x_node)
    y = array_of(y_node)
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if (type(x) is not _ndarray or gy is None or x.dtype.kind != 'f'
            or gy.dtype != x.dtype or y.dtype != x.dtype
            or gy.shape != y.shape):
        return NOT_HANDLED
    axis = func.axis
    shape = x.shape
    if axis is not None:
        ndim = len(shape)
        axes = sorted([a + ndim if a < 0 else a for a in axis])
        kept = _kept_shape(gy, y, axes)
        if kept is None:
            for a in axes:
                gy = _expand_dims(gy, a)
                y = _expand_dims(y, a)
        else:
            gy = gy.reshape(kept)
            y = y.reshape(kept)
    if gy.shape != shape:
        gy = broadcast_to(gy, shape)
    if y.shape != shape:
        y = broadcast_to(y, shape)
    cdef int raised, own = 0
    saved = quiet_begin()
    try:
        d = subtract_loop.call_broadcast(x, y, &own)
        e = _utils.force_array(_exp(
            _utils.force_array(x - y) if d is None else d))
        gx = multiply_loop.call_broadcast(gy, e, &own)
        if gx is None:
            gx = _utils.force_array(gy * e)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it; the loops called here raised ``own``.
        raised = quiet_end(saved) | own
        if acts(raised):
            return NOT_HANDLED
    return (new_grad(
        gx,
        grad_requires_grad(gy_var) or requires_grad_of(x_node)
        or requires_grad_of(y_node)),)


cdef tuple _kept_shape(object gy, object y, list axes):
    """The shape ``numpy.expand_dims`` gives ndarrays ``gy`` and ``y`` (of
    one shape) for each of ``axes`` in turn, a reshape to which is the same
    view; None where it would raise, or for other arrays."""
    if type(gy) is not _ndarray or type(y) is not _ndarray:
        return None
    cdef list kept = list(gy.shape)
    for a in axes:
        if type(a) is not int or not 0 <= a <= len(kept):
            return None
        kept.insert(a, 1)
    return tuple(kept)


ENTRIES = (
    compiled(logsumexp.LogSumExp, _forward,
             ('forward', 'retain_inputs', 'retain_outputs'),
             _backward, backward_callees=(
                 (chainer.functions, 'expand_dims'),
                 (chainer.functions, 'broadcast_to'),
                 (chainer.functions, 'exp'),
                 (expand_dims.ExpandDims, '__init__'),
                 (expand_dims.ExpandDims, 'check_type_forward'),
                 (expand_dims.ExpandDims, 'forward'),
                 (broadcast.BroadcastTo, '__init__'),
                 (broadcast.BroadcastTo, 'check_type_forward'),
                 (broadcast.BroadcastTo, 'forward'),
                 (chainer.Variable, '__sub__'),
                 (chainer.Variable, '__mul__'),
                 (basic_math.Sub, 'check_type_forward'),
                 (basic_math.Sub, 'forward'),
                 (exponential.Exp, 'check_type_forward'),
                 (exponential.Exp, 'forward'),
                 (exponential.Exp, 'forward_cpu'),
                 (exponential.Exp, 'retain_outputs'),
                 (basic_math.Mul, 'check_type_forward'),
                 (basic_math.Mul, 'forward'),
                 (basic_math.Mul, 'retain_inputs')),
             type_check=('axis',)),
)
