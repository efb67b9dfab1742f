# cython: boundscheck=True, wraparound=True
"""Compiled ``Exp`` and ``Log``: forward and backward on NumPy arrays."""
import numpy

import chainer
from chainer.functions.math import basic_math
from chainer.functions.math import exponential

from chainer_fastpath._core._attrs cimport retain_inputs, retain_outputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport (
    array_of, float_operand, requires_grad_of, retained_output)
from chainer_fastpath._runtime._forced cimport forced_quietly

cdef object _exp = numpy.exp
cdef object _log = numpy.log
cdef object _multiply = numpy.multiply
cdef object _divide = numpy.true_divide


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Exp.forward_cpu.
    if len(inputs) != 1:
        return NOT_HANDLED
    y = forced_quietly(_exp, inputs[0])
    if y is None:
        return NOT_HANDLED
    retain_outputs(node, (0,))
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Exp.backward: y * gy, a Mul node, whose type check passes for one
    # floating dtype (and shapes that broadcast: equal ones here).
    y_node = retained_output(func)
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if y_node is None or gy is None:
        return NOT_HANDLED
    y = array_of(y_node)
    if y.dtype.kind != 'f' or gy.dtype != y.dtype or gy.shape != y.shape:
        return NOT_HANDLED
    gx = forced_quietly(_multiply, y, gy)
    if gx is None:
        return NOT_HANDLED
    return (new_grad(gx,
                     requires_grad_of(y_node) or grad_requires_grad(gy_var)),)


cdef object _log_forward(object node, tuple inputs, ConfigView config):
    # Log.forward_cpu.
    if len(inputs) != 1:
        return NOT_HANDLED
    y = forced_quietly(_log, inputs[0])
    if y is None:
        return NOT_HANDLED
    retain_inputs(node, (0,))
    return y,


cdef object _log_backward(object func, tuple indexes, tuple grad_outputs):
    # Log.backward: force_array(gy / x), a Div node, whose type check
    # passes for one floating dtype (and shapes that broadcast: equal ones
    # here), and a Variable force_array returns as it is.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    x = None if gy is None else float_operand(func, gy)
    if x is None:
        return NOT_HANDLED
    gx = forced_quietly(_divide, gy, x)
    if gx is None:
        return NOT_HANDLED
    return (new_grad(gx,
                     requires_grad_of(func.inputs[0])
                     or grad_requires_grad(gy_var)),)


ENTRIES = (
    compiled(exponential.Exp, _forward,
             ('forward', 'forward_cpu', 'retain_outputs'),
             _backward, backward_callees=(
                 (chainer.Variable, '__mul__'),
                 (basic_math.Mul, 'check_type_forward'),
                 (basic_math.Mul, 'forward'),
                 (basic_math.Mul, 'retain_inputs')),
             type_check=()),
    compiled(exponential.Log, _log_forward,
             ('forward', 'forward_cpu', 'retain_inputs'),
             _log_backward, backward_callees=(
                 (chainer.Variable, '__truediv__'),
                 (basic_math.Div, 'check_type_forward'),
                 (basic_math.Div, 'forward'),
                 (basic_math.Div, 'retain_inputs')),
             type_check=()),
)
