# cython: boundscheck=True, wraparound=True
"""Compiled ``SquaredError``: forward and backward on NumPy arrays.

Each NumPy operation that may raise a floating-point exception runs with
NumPy's error handling off (``_fpe``); where NumPy would act on one, the
node's own code runs.
"""
import numpy

import chainer
from chainer.functions.loss import squared_error
from chainer.functions.math import basic_math

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet2
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport float_operands, requires_grad_of

cdef object _utils = chainer.utils
cdef object _np_subtract = numpy.subtract
cdef object _np_multiply = numpy.multiply


cdef object _forward(object node, tuple in_data, ConfigView config):
    if len(in_data) != 2:
        return NOT_HANDLED   # stock's unpacking error, not Cython's
    x0, x1 = in_data
    if x0.dtype.kind != 'f' or x1.dtype.kind != 'f':
        # Integers (type_check off): NumPy's scalar arithmetic on a 0-d
        # difference reports an integer overflow that its loops do not.
        return NOT_HANDLED
    cdef int raised = 0
    diff = quiet2(_np_subtract, x0, x1, &raised)
    y = quiet2(_np_multiply, diff, diff, &raised)
    if acts(raised):
        return NOT_HANDLED
    retain_inputs(node, (0, 1))
    return _utils.force_array(y, dtype=x0.dtype),


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # SquaredError.backward: gx = gy * 2 * (x0 - x1); (gx, -gx). Each
    # operator applies one node: MulConstant (value 2 in gy's dtype), Sub
    # and Mul (their type checks pass for one float dtype and one shape),
    # Neg; each forward is one NumPy operation through force_array.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return NOT_HANDLED
    xs = float_operands(func, gy, True)
    if xs is None:
        return NOT_HANDLED
    x0, x1 = xs
    dtype = gy.dtype
    inputs = func.inputs
    cdef bint rg = (grad_requires_grad(gy_var) or requires_grad_of(inputs[0])
                    or requires_grad_of(inputs[1]))
    cdef int raised = 0
    g2 = quiet2(_np_multiply, dtype.type(2), gy, &raised)
    diff = quiet2(_np_subtract, x0, x1, &raised)
    gx = quiet2(_np_multiply, _utils.force_array(g2),
                _utils.force_array(diff), &raised)
    if acts(raised):
        return NOT_HANDLED
    gx = _utils.force_array(gx)
    return (new_grad(gx, rg),
            new_grad(_utils.force_array(-gx), rg))


ENTRIES = (
    compiled(squared_error.SquaredError,
             _forward, ('forward', 'retain_inputs'),
             _backward, backward_callees=(
                 (basic_math.MulConstant, '__init__'),
                 (basic_math.MulConstant, 'check_type_forward'),
                 (basic_math.MulConstant, 'forward'),
                 (basic_math.Sub, 'check_type_forward'),
                 (basic_math.Sub, 'forward'),
                 (basic_math.Mul, 'check_type_forward'),
                 (basic_math.Mul, 'forward'),
                 (basic_math.Mul, 'retain_inputs'),
                 (basic_math.Neg, '__init__'),
                 (basic_math.Neg, 'check_type_forward'),
                 (basic_math.Neg, 'forward'),
                 (basic_math.Neg, 'retain_inputs'),
                 (chainer.Variable, '__mul__'),
                 (chainer.Variable, '__sub__'),
                 (chainer.Variable, '__neg__'),
                 (basic_math, '_preprocess_const')),
             type_check=()),
)
