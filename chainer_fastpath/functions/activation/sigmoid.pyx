# cython: boundscheck=True, wraparound=True
"""Compiled ``Sigmoid``: forward and backward on NumPy arrays."""
import numpy

import chainer
from chainer.functions.activation import sigmoid

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport (
    activation_grad, activation_inputs, array_of)

cdef object _tanh = numpy.tanh
cdef object _utils = chainer.utils


cdef object _forward(object node, tuple inputs, ConfigView config):
    # FunctionNode.forward -> Sigmoid.forward_cpu.
    assert len(inputs) > 0
    x = inputs[0]
    half = x.dtype.type(0.5)
    y = _utils.force_array(_tanh(x * half) * half + half)
    node._output_indexes_to_retain = (0,)
    node._use_cudnn = False
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Sigmoid.backward: SigmoidGrad((x,)).apply((y, gy)), whose type check
    # asks for float y and gy and whose forward_cpu is gy * y * (1 - y),
    # 1 in y's dtype.
    args = activation_inputs(func, grad_outputs)
    if args is None:
        return NOT_HANDLED
    y_node, gy_var, gy = args
    y = array_of(y_node)
    if y.dtype.kind != 'f' or gy.dtype.kind != 'f':
        return NOT_HANDLED
    one = y.dtype.type(1)
    return activation_grad(y_node, gy_var, gy * y * (one - y))


ENTRIES = (
    compiled(sigmoid.Sigmoid,
             _forward, ('forward', 'forward_cpu', 'retain_outputs'),
             _backward, backward_callees=(
                 (sigmoid.SigmoidGrad, 'check_type_forward'),
                 (sigmoid.SigmoidGrad, 'forward'),
                 (sigmoid.SigmoidGrad, 'forward_cpu')),
             type_check=()),
)
