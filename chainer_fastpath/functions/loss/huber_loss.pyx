# cython: boundscheck=True, wraparound=True
"""Compiled ``HuberLoss``: forward and backward on NumPy arrays."""
import numpy

import chainer
import chainer.functions
from chainer.functions.array import broadcast
from chainer.functions.array import expand_dims
from chainer.functions.loss import huber_loss
from chainer.functions.math import basic_math
from chainer.functions.math import clip

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._broadcast_views cimport broadcast_to
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport requires_grad_of, retained_inputs

cdef object _abs = numpy.abs
cdef object _square = numpy.square
cdef object _maximum = numpy.maximum
cdef object _minimum = numpy.minimum
cdef object _clip = numpy.clip
cdef object _utils = chainer.utils


cdef object _forward(object node, tuple inputs, ConfigView config):
    # HuberLoss.forward on NumPy arrays.
    if len(inputs) != 2:
        return NOT_HANDLED
    x0, x1 = inputs
    dtype = x0.dtype
    cdef int raised
    saved = quiet_begin()
    try:
        linear_part = _utils.force_array(x0 - x1, dtype)
        delta = dtype.type(node.delta)
        _abs(linear_part, out=linear_part)
        square_part = _utils.force_array(_square(linear_part), dtype)
        linear_part *= 2 * delta
        linear_part -= delta * delta
        _maximum(linear_part, delta * delta, out=linear_part)
        _minimum(square_part, linear_part, out=square_part)
        y = square_part
        y *= 0.5
        if node.reduce == 'sum_along_second_axis':
            y = y.sum(axis=1)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    retain_inputs(node, (0, 1))
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # HuberLoss.backward: gx = broadcast_to(gy (its axis 1 put back when
    # reduced), diff.shape) * clip(x0 - x1, -delta, delta), returned as
    # (gx, -gx): Sub, Clip, ExpandDims, BroadcastTo, Mul and Neg nodes,
    # whose checks pass for one floating dtype and the shapes checked
    # here.
    delta = func.delta
    if ((type(delta) is not float and type(delta) is not int)
            or not delta > 0 or func._input_indexes_to_retain != (0, 1)):
        return NOT_HANDLED
    xs = retained_inputs(func, [])
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if xs is None or gy is None:
        return NOT_HANDLED
    x0, x1 = xs
    dtype = x0.dtype
    # Native byte order: NumPy's x0 - x1 of swapped inputs is native, which
    # stock's Mul of it and gy then rejects.
    if (dtype.kind != 'f' or not dtype.isnative or x1.dtype != dtype
            or gy.dtype != dtype or x1.shape != x0.shape):
        return NOT_HANDLED
    shape = x0.shape
    if func.reduce == 'sum_along_second_axis':
        if len(shape) < 2 or gy.shape != shape[:1] + shape[2:]:
            return NOT_HANDLED
        gy = gy.reshape(gy.shape[:1] + (1,) + gy.shape[1:])
    elif gy.shape != shape:
        return NOT_HANDLED
    if gy.shape != shape:
        gy = broadcast_to(gy, shape)
    cdef int raised
    saved = quiet_begin()
    try:
        diff = _utils.force_array(x0 - x1)
        gx = _utils.force_array(gy * _utils.force_array(
            _clip(diff, -delta, delta), dtype))
        ngx = _utils.force_array(-gx)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    cdef bint rg = (grad_requires_grad(gy_var)
                    or requires_grad_of(func.inputs[0])
                    or requires_grad_of(func.inputs[1]))
    return (new_grad(gx, rg),
            new_grad(ngx, rg))


ENTRIES = (
    compiled(huber_loss.HuberLoss, _forward, ('forward', 'retain_inputs'),
             _backward, backward_callees=(
                 (chainer.Variable, '__sub__'),
                 (chainer.Variable, '__mul__'),
                 (chainer.Variable, '__neg__'),
                 (chainer.functions, 'clip'),
                 (chainer.functions, 'expand_dims'),
                 (chainer.functions, 'broadcast_to'),
                 (basic_math.Sub, 'check_type_forward'),
                 (basic_math.Sub, 'forward'),
                 (clip.Clip, '__init__'),
                 (clip.Clip, 'check_type_forward'),
                 (clip.Clip, 'forward'),
                 (clip.Clip, 'forward_cpu'),
                 (clip.Clip, 'retain_inputs'),
                 (expand_dims.ExpandDims, '__init__'),
                 (expand_dims.ExpandDims, 'check_type_forward'),
                 (expand_dims.ExpandDims, 'forward'),
                 (broadcast.BroadcastTo, '__init__'),
                 (broadcast.BroadcastTo, 'check_type_forward'),
                 (broadcast.BroadcastTo, 'forward'),
                 (basic_math.Mul, 'check_type_forward'),
                 (basic_math.Mul, 'forward'),
                 (basic_math.Mul, 'retain_inputs'),
                 (basic_math.Neg, '__init__'),
                 (basic_math.Neg, 'check_type_forward'),
                 (basic_math.Neg, 'forward'),
                 (basic_math.Neg, 'retain_inputs')),
             type_check=()),
)
