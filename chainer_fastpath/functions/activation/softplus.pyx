# cython: boundscheck=True, wraparound=True
"""Compiled ``Softplus``: forward and backward on NumPy arrays.

Stock's own expressions, in its order and with its Python floats
(``beta``, ``beta_inv``) as operands, so NumPy casts them as stock's do
(a ``beta`` float16 cannot hold makes ``beta * x`` float32, cast back at
the end).
"""
import numpy

import chainer
from chainer.functions.activation import softplus

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport (
    requires_grad_of, retained_inputs)

cdef object _fmax = numpy.fmax
cdef object _log1p = numpy.log1p
cdef object _exp = numpy.exp
cdef object _fabs = numpy.fabs
cdef object _utils = chainer.utils


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Softplus.forward_cpu, where beta and beta_inv are the floats
    # __init__ made.
    if len(inputs) != 1:
        return NOT_HANDLED
    x, = inputs
    beta = node.beta
    beta_inv = node.beta_inv
    if type(beta) is not float or type(beta_inv) is not float:
        return NOT_HANDLED
    cdef int raised
    saved = quiet_begin()
    try:
        bx = beta * x
        y = (_fmax(bx, 0) + _log1p(_exp(-_fabs(bx)))) * beta_inv
        y = _utils.force_array(y, x.dtype)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    retain_inputs(node, (0,))
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Softplus.backward: SoftplusGrad((beta,)).apply((x, gy)), whose type
    # check asks for float x and gy, and whose forward_cpu is
    # (1 - 1 / (1 + exp(beta * x))) * gy cast to x's dtype.
    beta = func.beta
    if type(beta) is not float or func._input_indexes_to_retain != (0,):
        return NOT_HANDLED
    xs = retained_inputs(func, [])
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if xs is None or gy is None:
        return NOT_HANDLED
    x, = xs
    if x.dtype.kind != 'f' or gy.dtype.kind != 'f' or gy.shape != x.shape:
        return NOT_HANDLED
    cdef int raised
    saved = quiet_begin()
    try:
        gx = (1 - 1 / (1 + _exp(beta * x))) * gy
        gx = _utils.force_array(gx, x.dtype)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return (new_grad(gx, requires_grad_of(func.inputs[0])
                     or grad_requires_grad(gy_var)),)


ENTRIES = (
    compiled(softplus.Softplus, _forward,
             ('forward', 'forward_cpu', 'retain_inputs'),
             _backward, backward_callees=(
                 (softplus.SoftplusGrad, '__init__'),
                 (softplus.SoftplusGrad, 'check_type_forward'),
                 (softplus.SoftplusGrad, 'forward'),
                 (softplus.SoftplusGrad, 'forward_cpu'),
                 (softplus.SoftplusGrad, 'retain_inputs')),
             type_check=()),
)
