# cython: boundscheck=True, wraparound=True
"""Compiled ``LogSoftmax``: forward and backward on NumPy arrays.

Shares nothing with ``softmax.pyx``: stock's ``_log_softmax`` subtracts
``logsumexp`` (max, exp in place, sum, log in place, added into the max),
which ``softmax.pyx`` does not compute.
"""
import numpy

import chainer
from chainer.functions.activation import log_softmax

from chainer_fastpath._core._attrs cimport retain_outputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport (
    NOT_HANDLED, compiled, forward_callees)
from chainer_fastpath._core._retained cimport (
    array_of, requires_grad_of, retained_output)

cdef object _exp = numpy.exp
cdef object _log = numpy.log
cdef object _numpy = numpy
cdef object _chainer = chainer


cdef bint _axis_in_range(object axis, Py_ssize_t ndim) except -1:
    """Whether ``axis`` is an int the type check accepts for ``ndim``
    dimensions (anything else, type_check off, is stock's)."""
    return type(axis) is int and -ndim <= axis < ndim


cdef object _forward(object node, tuple inputs, ConfigView config):
    # LogSoftmax.forward on NumPy arrays: _log_softmax (its cuDNN question
    # asked; on NumPy only the config check counts) is x - logsumexp(x,
    # axis). An empty input's reductions raise or warn from stock's lines.
    if len(inputs) != 1:
        return NOT_HANDLED
    x, = inputs
    axis = node.axis
    if not _axis_in_range(axis, x.ndim) or x.size == 0:
        return NOT_HANDLED
    # Read per call, as stock reads it (a mock of it is called).
    _chainer.should_use_cudnn('>=auto')
    cdef int raised
    saved = quiet_begin()
    try:
        m = x.max(axis=axis, keepdims=True)
        y = x - m
        _exp(y, out=y)
        s = y.sum(axis=axis, keepdims=True)
        _log(s, out=s)
        m += s
        y = x - m
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    node._x_xp = _numpy
    node._x_shape = x.shape
    node._x_dtype = x.dtype
    retain_outputs(node, (0,))
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # LogSoftmax.backward: LogSoftmaxGrad(...).apply((y, gy)), a node
    # without a type check whose forward on NumPy is
    # gy - exp(y) * gy.sum(axis, keepdims=True).
    y_node = retained_output(func)
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if y_node is None or gy is None or func._x_xp is not _numpy:
        return NOT_HANDLED
    y = array_of(y_node)
    axis = func.axis
    if (gy.shape != y.shape or gy.dtype != y.dtype or y.dtype.kind != 'f'
            or not _axis_in_range(axis, y.ndim)):
        return NOT_HANDLED
    cdef int raised
    saved = quiet_begin()
    try:
        gx = gy - _exp(y) * gy.sum(axis=axis, keepdims=True)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return (new_grad(gx, requires_grad_of(y_node)
                     or grad_requires_grad(gy_var)),)


ENTRIES = (
    forward_callees(compiled(
        log_softmax.LogSoftmax, _forward, ('forward', 'retain_outputs'),
        _backward, backward_callees=(
            (log_softmax.LogSoftmaxGrad, '__init__'),
            (log_softmax.LogSoftmaxGrad, 'check_type_forward'),
            (log_softmax.LogSoftmaxGrad, 'forward'),
            (log_softmax.LogSoftmaxGrad, 'retain_inputs')),
        type_check=('axis',)), (
            (log_softmax, '_log_softmax'),
            (log_softmax, 'logsumexp'))),
)
