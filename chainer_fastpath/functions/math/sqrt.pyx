# cython: boundscheck=True, wraparound=True
"""Compiled ``Sqrt``: forward and backward on NumPy arrays."""
import numpy

import chainer
from chainer.functions.math import basic_math
from chainer.functions.math import sqrt

from chainer_fastpath._core._attrs cimport retain_outputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet2
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport (
    array_of, requires_grad_of, retained_output)
from chainer_fastpath._runtime._forced cimport forced, forced_quietly

cdef type _ndarray = numpy.ndarray
cdef object _sqrt = numpy.sqrt
cdef object _multiply = numpy.multiply
cdef object _divide = numpy.true_divide


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Sqrt.forward: force_array(numpy.sqrt(x, dtype=x.dtype)), NumPy acting
    # on no floating-point exception; where it would act on one (the root
    # of a negative number), stock runs it again and warns or raises.
    if len(inputs) != 1:
        return NOT_HANDLED
    x = inputs[0]
    y = forced_quietly(_sqrt, x, None, x.dtype)
    if y is None:
        return NOT_HANDLED
    retain_outputs(node, (0,))
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Sqrt.backward: gy / (y * 2.0), a MulConstant node (its forward
    # y.dtype.type(2.0) * y) and a Div node, whose type check passes for
    # one floating dtype (and shapes that broadcast: equal ones here).
    y_node = retained_output(func)
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if y_node is None or gy is None:
        return NOT_HANDLED
    y = array_of(y_node)
    if (type(y) is not _ndarray or type(gy) is not _ndarray
            or y.dtype.kind != 'f' or gy.dtype != y.dtype
            or gy.shape != y.shape):
        return NOT_HANDLED
    cdef int raised = 0
    twice = forced(quiet2(_multiply, y.dtype.type(2.0), y,
                          &raised))
    if acts(raised):
        return NOT_HANDLED
    gx = forced(quiet2(_divide, gy, twice, &raised))
    if acts(raised):
        return NOT_HANDLED
    return (new_grad(gx,
                     requires_grad_of(y_node) or grad_requires_grad(gy_var)),)


ENTRIES = (
    compiled(sqrt.Sqrt, _forward, ('forward', 'retain_outputs'),
             _backward, backward_callees=(
                 (chainer.Variable, '__mul__'),
                 (chainer.Variable, '__truediv__'),
                 (basic_math, '_preprocess_const'),
                 (basic_math, '_preprocess_rhs'),
                 (basic_math.MulConstant, '__init__'),
                 (basic_math.MulConstant, 'check_type_forward'),
                 (basic_math.MulConstant, 'forward'),
                 (basic_math.Div, 'check_type_forward'),
                 (basic_math.Div, 'forward'),
                 (basic_math.Div, 'retain_inputs')),
             type_check=()),
)
