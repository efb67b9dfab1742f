# cython: boundscheck=True, wraparound=True
"""Compiled ``LeakyReLU``: forward and backward on NumPy arrays.

Each NumPy operation runs with NumPy's error handling off (``_fpe``); where
NumPy would act on a floating-point exception, the node's own code runs.
"""
import numpy

from chainer.functions.activation import leaky_relu

from chainer_fastpath._core._attrs cimport retain_inputs, retain_outputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_into
from chainer_fastpath._core._grads cimport (
    grad_array, grad_layout, grad_requires_grad, new_grad)
from chainer_fastpath._core._objects cimport node_data
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport array_of, retained_output

cdef type _ndarray = numpy.ndarray
cdef object _np_multiply = numpy.multiply
# The slopes whose ``slope >= 0`` runs no code of anybody's: the backward
# reads the sign before it may hand the node back to stock.
cdef tuple _SLOPE_TYPES = (float, int, numpy.float16, numpy.float32,
                           numpy.float64)


cdef object _scaled_where_not_positive(object a, object cond, object slope):
    """``a[cond <= 0] *= slope`` on a new array ``a``; False where NumPy
    would have acted on a floating-point exception."""
    cdef int raised = 0
    mask = cond <= 0
    part = a[mask]
    a[mask] = quiet_into(_np_multiply, part, slope, part, &raised)
    return not acts(raised)


cdef object _forward(object node, tuple inputs, ConfigView config):
    # FunctionNode.forward -> LeakyReLU.forward_cpu, iDeep unavailable:
    # the same NumPy operations, for the slopes whose ``*=`` is NumPy's
    # multiply.
    assert len(inputs) > 0
    x, = inputs
    if type(node.slope) not in _SLOPE_TYPES:
        return NOT_HANDLED
    y = x.copy()
    if not _scaled_where_not_positive(y, x, node.slope):
        return NOT_HANDLED
    if node.slope >= 0:
        retain_outputs(node, (0,))
    else:
        retain_inputs(node, (0,))
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # LeakyReLU.backward: cond is the retained output (slope >= 0) or the
    # retained input (slope < 0); then _LeakyReLUGrad(cond, slope).apply(
    # grad_outputs), a node without a type check whose forward_cpu (iDeep
    # unavailable) is gy.copy() with the elements where cond <= 0
    # multiplied in place by slope.
    slope = func.slope
    if type(slope) not in _SLOPE_TYPES or len(grad_outputs) != 1:
        return NOT_HANDLED
    if slope >= 0:
        node = retained_output(func)
        if node is None:
            return NOT_HANDLED
    else:
        retained = func._input_indexes_to_retain
        if type(retained) is not tuple or retained != (0,):
            return NOT_HANDLED
        node = func.inputs[0]
        if node_data(node) is None:
            return NOT_HANDLED
    cond = array_of(node)
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    # Stock's errors (a gradient of another shape, an integer one, a
    # non-standard layout) are left to stock to raise.
    if (type(cond) is not _ndarray or gy is None
            or grad_layout(gy_var) is not None
            or cond.dtype.kind != 'f' or gy.dtype.kind != 'f'
            or cond.shape != gy.shape):
        return NOT_HANDLED
    gx = gy.copy()
    if not _scaled_where_not_positive(gx, cond, slope):
        return NOT_HANDLED
    return (new_grad(gx, grad_requires_grad(gy_var)),)


ENTRIES = (
    compiled(leaky_relu.LeakyReLU,
             _forward, ('forward', 'forward_cpu', 'retain_inputs',
                        'retain_outputs'),
             _backward, backward_callees=(
                 (leaky_relu._LeakyReLUGrad, '__init__'),
                 (leaky_relu._LeakyReLUGrad, 'check_type_forward'),
                 (leaky_relu._LeakyReLUGrad, 'forward'),
                 (leaky_relu._LeakyReLUGrad, 'forward_cpu')),
             type_check=()),
)
