# cython: boundscheck=True, wraparound=True
"""Compiled ``MeanSquaredError``: forward and backward on NumPy arrays."""
import numpy

import chainer
import chainer.functions
from chainer.functions.array import broadcast
from chainer.functions.loss import mean_squared_error
from chainer.functions.math import basic_math

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._broadcast_views cimport broadcast_to
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled, nodeless
from chainer_fastpath._core._retained cimport float_operands, requires_grad_of

cdef object _array = numpy.array
cdef object _utils = chainer.utils


cdef object _forward(object node, tuple inputs, ConfigView config):
    # MeanSquaredError.forward_cpu: the difference raveled, its dot with
    # itself divided by its size (NumPy's scalar arithmetic), as a 0-d
    # array of the difference's dtype. Other dtypes or shapes (type_check
    # off) are stock's, whose errors come from its own line.
    if len(inputs) != 2:
        return NOT_HANDLED
    x0, x1 = inputs
    dtype = x0.dtype
    if dtype.kind != 'f' or x1.dtype != dtype or x1.shape != x0.shape:
        return NOT_HANDLED
    cdef int raised
    saved = quiet_begin()
    try:
        diff = (x0 - x1).ravel()
        y = _array(diff.dot(diff) / diff.size, dtype=diff.dtype)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    retain_inputs(node, (0, 1))
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # MeanSquaredError.backward: diff = x0 - x1 (a Sub node), gy broadcast
    # to diff's shape (a BroadcastTo node; none where the shapes agree),
    # times diff (Mul), times 2. / diff.size (MulConstant: the value in
    # gy's dtype), negated for x1 (Neg); the checks pass for one floating
    # dtype, a 0-d gy and inputs of one shape. An empty diff's
    # ZeroDivisionError is stock's.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    xs = float_operands(func, gy, False)
    if xs is None:
        return NOT_HANDLED
    x0, x1 = xs
    shape = x0.shape
    if x1.shape != shape or gy.shape != () or x0.size == 0:
        return NOT_HANDLED
    inputs = func.inputs
    cdef bint rg = (grad_requires_grad(gy_var) or requires_grad_of(inputs[0])
                    or requires_grad_of(inputs[1]))
    cdef int raised
    saved = quiet_begin()
    try:
        diff = _utils.force_array(x0 - x1)
        gy0 = gy if shape == () else broadcast_to(gy, shape)
        gx0 = _utils.force_array(gy0 * diff)
        gx0 = _utils.force_array(gy.dtype.type(2. / diff.size) * gx0)
        ngx0 = _utils.force_array(-gx0) if 1 in indexes else None
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    # Stock returns the gradients asked for, in order.
    grads = [new_grad(gx0, rg)] if 0 in indexes else []
    if ngx0 is not None:
        grads.append(new_grad(ngx0, rg))
    return tuple(grads)


ENTRIES = (
    nodeless(compiled(
        mean_squared_error.MeanSquaredError,
        _forward, ('forward', 'forward_cpu', 'retain_inputs'),
        _backward, backward_callees=(
            (chainer.Variable, '__sub__'),
            (chainer.Variable, '__mul__'),
            (chainer.Variable, '__neg__'),
            (chainer.functions, 'broadcast_to'),
            (basic_math.Sub, 'check_type_forward'),
            (basic_math.Sub, 'forward'),
            (broadcast.BroadcastTo, '__init__'),
            (broadcast.BroadcastTo, 'check_type_forward'),
            (broadcast.BroadcastTo, 'forward'),
            (basic_math.Mul, 'check_type_forward'),
            (basic_math.Mul, 'forward'),
            (basic_math.Mul, 'retain_inputs'),
            (basic_math.MulConstant, '__init__'),
            (basic_math.MulConstant, 'check_type_forward'),
            (basic_math.MulConstant, 'forward'),
            (basic_math.Neg, '__init__'),
            (basic_math.Neg, 'check_type_forward'),
            (basic_math.Neg, 'forward'),
            (basic_math.Neg, 'retain_inputs'),
            (basic_math, '_preprocess_const')),
        type_check=())),
)
