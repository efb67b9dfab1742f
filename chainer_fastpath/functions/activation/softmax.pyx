# cython: boundscheck=True, wraparound=True
"""Compiled ``Softmax``: forward and backward on NumPy arrays."""
import numpy

from chainer.functions.activation import softmax

from chainer_fastpath._core._attrs cimport retain_outputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport (
    array_of, requires_grad_of, retained_output)

cdef object _exp = numpy.exp


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Softmax.forward on NumPy arrays (no cuDNN there).
    if len(inputs) != 1:
        return NOT_HANDLED
    x = inputs[0]
    axis = node.axis
    cdef int raised
    saved = quiet_begin()
    try:
        y = x - x.max(axis=axis, keepdims=True)
        _exp(y, out=y)
        y /= y.sum(axis=axis, keepdims=True)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    retain_outputs(node, (0,))
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Softmax.backward: _SoftmaxGrad(axis).apply((y, gy)), a node without
    # a type check whose forward on NumPy is y * gy less y times its sum
    # over axis.
    y_node = retained_output(func)
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if y_node is None or gy is None:
        return NOT_HANDLED
    y = array_of(y_node)
    if gy.shape != y.shape or gy.dtype.kind != 'f' or y.dtype.kind != 'f':
        return NOT_HANDLED
    axis = func.axis
    cdef int raised
    saved = quiet_begin()
    try:
        gx = y * gy
        sumdx = gx.sum(axis=axis, keepdims=True)
        gx -= y * sumdx
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return (new_grad(gx, requires_grad_of(y_node)
                     or grad_requires_grad(gy_var)),)


ENTRIES = (
    compiled(softmax.Softmax, _forward, ('forward', 'retain_outputs'),
             _backward, backward_callees=(
                 (softmax._SoftmaxGrad, '__init__'),
                 (softmax._SoftmaxGrad, 'check_type_forward'),
                 (softmax._SoftmaxGrad, 'forward'),
                 (softmax._SoftmaxGrad, 'retain_inputs')),
             type_check=('axis',)),
)
