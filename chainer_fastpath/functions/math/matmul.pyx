# cython: boundscheck=True, wraparound=True
"""Compiled ``MatMul``: forward, and backward where both operands are
matrices or batches of them, on NumPy arrays."""
import chainer
import chainer.functions
from chainer.functions.math import matmul
from chainer.functions.math import sum as sum_mod

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._apply cimport apply_detached
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._grads cimport (
    grad_array, grad_raw, grad_requires_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport requires_grad_of, retained_inputs
from chainer_fastpath._runtime._sum_grads cimport sum_to_grad

cdef object _utils = chainer.utils


cdef object _forward(object node, tuple inputs, ConfigView config):
    # MatMul.forward on NumPy arrays.
    if len(inputs) != 2:
        return NOT_HANDLED
    retain_inputs(node, (0, 1))
    a, b = inputs
    dtype = node.dtype
    cdef int raised
    saved = quiet_begin()
    try:
        y = matmul._matmul(a, b, node.transa, node.transb, node.transc)
        y = _utils.force_array(y, y.dtype if dtype is None else dtype)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return y,


cdef object _sum_to(tuple gx, object shape):
    # F.sum_to(gx, shape) of MatMul node output gx (a 1-tuple).
    var = gx[0]
    return sum_to_grad(var, grad_raw(var), shape)


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # MatMul.backward for operands of 2 or more dimensions: a MatMul node
    # of gy and the other operand for each gradient asked for (stock's
    # type check and this module's forward, applied detached), summed to
    # the operand's shape.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None or func._input_indexes_to_retain != (0, 1):
        return NOT_HANDLED
    xs = retained_inputs(func, [])
    if xs is None:
        return NOT_HANDLED
    a, b = xs
    if a.ndim < 2 or b.ndim < 2:
        return NOT_HANDLED
    inputs = func.inputs
    transa = func.transa
    transb = func.transb
    transc = func.transc
    cdef bint gy_rg = grad_requires_grad(gy_var)
    cdef list ret = []
    if 0 in indexes:
        ret.append(_sum_to(apply_detached(
            matmul.MatMul(transc, not transb, transa, a.dtype), (gy, b),
            gy_rg or requires_grad_of(inputs[1])), a.shape))
    if 1 in indexes:
        ret.append(_sum_to(apply_detached(
            matmul.MatMul(not transa, transc, transb, b.dtype), (a, gy),
            gy_rg or requires_grad_of(inputs[0])), b.shape))
    for g in ret:
        if g is NOT_HANDLED:
            return NOT_HANDLED
    return tuple(ret)


ENTRIES = (
    compiled(matmul.MatMul, _forward, ('forward', 'retain_inputs'),
             _backward, backward_callees=(
                 (matmul.MatMul, '__init__'),
                 (matmul.MatMul, 'check_type_forward'),
                 (matmul.MatMul, 'forward'),
                 (matmul.MatMul, 'retain_inputs'),
                 (chainer.functions, 'sum_to'),
                 (sum_mod.SumTo, '__init__'),
                 (sum_mod.SumTo, 'check_type_forward'),
                 (sum_mod.SumTo, 'forward'),
                 (chainer.utils, 'sum_to')),
             type_check=('transa', 'transb')),
)
