# cython: boundscheck=True, wraparound=True
"""Compiled ``LinearInterpolate``: forward and backward on NumPy
arrays."""
import chainer
from chainer.functions.math import linear_interpolate

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled, nodeless
from chainer_fastpath._core._retained cimport (
    requires_grad_of, retained_inputs)

cdef object _utils = chainer.utils


cdef bint _same_floats(list arrays) except -1:
    """Whether ``arrays`` have one floating dtype and one shape (what the
    type check asks; anything else, type_check off, is stock's)."""
    a = arrays[0]
    if a.dtype.kind != 'f':
        return False
    for b in arrays:
        if b.dtype != a.dtype or b.shape != a.shape:
            return False
    return True


cdef object _forward(object node, tuple inputs, ConfigView config):
    # LinearInterpolate.forward_cpu: p * x + (1 - p) * y, 1 in p's dtype.
    if len(inputs) != 3 or not _same_floats(list(inputs)):
        return NOT_HANDLED
    p, x, y = inputs
    cdef int raised
    saved = quiet_begin()
    try:
        one = p.dtype.type(1)
        z = _utils.force_array(p * x + (one - p) * y)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    retain_inputs(node, (0, 1, 2))
    return z,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # LinearInterpolate.backward: LinearInterpolateGrad().apply((p, x, y,
    # gz)), a node without a type check whose forward_cpu is
    # ((x - y) * gz, p * gz, gz - p * gz); all three returned.
    if func._input_indexes_to_retain != (0, 1, 2):
        return NOT_HANDLED
    gz_var = grad_outputs[0]
    gz = grad_array(gz_var)
    arrays = retained_inputs(func, [])
    if gz is None or arrays is None:
        return NOT_HANDLED
    p, x, y = arrays
    arrays.append(gz)
    if not _same_floats(arrays):
        return NOT_HANDLED
    cdef int raised
    saved = quiet_begin()
    try:
        pg = p * gz
        gp = _utils.force_array((x - y) * gz)
        gx = _utils.force_array(pg)
        gy = _utils.force_array(gz - pg)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    inputs = func.inputs
    cdef bint rg = (grad_requires_grad(gz_var) or requires_grad_of(inputs[0])
                    or requires_grad_of(inputs[1])
                    or requires_grad_of(inputs[2]))
    return new_grad(gp, rg), new_grad(gx, rg), new_grad(gy, rg)


ENTRIES = (
    nodeless(compiled(
        linear_interpolate.LinearInterpolate, _forward,
        ('forward', 'forward_cpu', 'retain_inputs'),
        _backward, backward_callees=(
            (linear_interpolate.LinearInterpolateGrad, '__init__'),
            (linear_interpolate.LinearInterpolateGrad, 'check_type_forward'),
            (linear_interpolate.LinearInterpolateGrad, 'forward'),
            (linear_interpolate.LinearInterpolateGrad, 'forward_cpu'),
            (linear_interpolate.LinearInterpolateGrad, 'retain_inputs')),
        type_check=())),
)
