# cython: boundscheck=True, wraparound=True
"""Compiled ``Tanh``: forward and backward on NumPy arrays."""
import numpy

import chainer
from chainer.functions.activation import tanh

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport (
    activation_grad, activation_inputs, array_of)

cdef object _tanh = numpy.tanh
cdef object _utils = chainer.utils


cdef object _forward(object node, tuple x, ConfigView config):
    # FunctionNode.forward -> Tanh.forward_cpu.
    assert len(x) > 0
    y = _utils.force_array(_tanh(x[0]))
    node._output_indexes_to_retain = (0,)
    node._use_cudnn = False
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Tanh.backward: TanhGrad(x).apply((y, gy)), a node without a type
    # check whose forward_cpu is gy * (1 - y * y), 1 in y's dtype.
    args = activation_inputs(func, grad_outputs)
    if args is None:
        return NOT_HANDLED
    y_node, gy_var, gy = args
    y = array_of(y_node)
    one = y.dtype.type(1)
    return activation_grad(y_node, gy_var, gy * (one - y * y))


ENTRIES = (
    compiled(tanh.Tanh,
             _forward, ('forward', 'forward_cpu', 'retain_outputs'),
             _backward, backward_callees=(
                 (tanh.TanhGrad, 'check_type_forward'),
                 (tanh.TanhGrad, 'forward'),
                 (tanh.TanhGrad, 'forward_cpu')),
             type_check=()),
)
