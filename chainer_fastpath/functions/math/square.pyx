# cython: boundscheck=True, wraparound=True
"""Compiled ``Square``: forward and backward on NumPy arrays."""
import numpy

import chainer
from chainer.functions.math import basic_math
from chainer.functions.math import square

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet2
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport (
    float_operand, requires_grad_of)
from chainer_fastpath._runtime._forced cimport forced, forced_quietly

cdef object _square = numpy.square
cdef object _multiply = numpy.multiply


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Square.forward: force_array(numpy.square(x, dtype=x.dtype)), NumPy
    # acting on no floating-point exception; where it would act on one
    # (an overflow), stock runs it again and warns or raises.
    if len(inputs) != 1:
        return NOT_HANDLED
    x = inputs[0]
    y = forced_quietly(_square, x, None, x.dtype)
    if y is None:
        return NOT_HANDLED
    retain_inputs(node, (0,))
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Square.backward: gy * 2.0 * x, a MulConstant node (its forward
    # gy.dtype.type(2.0) * gy) and a Mul node, whose type check passes for
    # one floating dtype (and shapes that broadcast: equal ones here).
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    x = None if gy is None else float_operand(func, gy)
    if x is None:
        return NOT_HANDLED
    cdef int raised = 0
    twice = forced(quiet2(_multiply, gy.dtype.type(2.0), gy,
                          &raised))
    if acts(raised):
        return NOT_HANDLED
    gx = forced(quiet2(_multiply, twice, x, &raised))
    if acts(raised):
        return NOT_HANDLED
    return (new_grad(gx,
                     grad_requires_grad(gy_var)
                     or requires_grad_of(func.inputs[0])),)


ENTRIES = (
    compiled(square.Square, _forward, ('forward', 'retain_inputs'),
             _backward, backward_callees=(
                 (chainer.Variable, '__mul__'),
                 (basic_math, '_preprocess_const'),
                 (basic_math, '_preprocess_rhs'),
                 (basic_math.MulConstant, '__init__'),
                 (basic_math.MulConstant, 'check_type_forward'),
                 (basic_math.MulConstant, 'forward'),
                 (basic_math.Mul, 'check_type_forward'),
                 (basic_math.Mul, 'forward'),
                 (basic_math.Mul, 'retain_inputs')),
             type_check=()),
)
