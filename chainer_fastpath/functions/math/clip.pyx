# cython: boundscheck=True, wraparound=True
"""Compiled ``Clip``: forward and backward on NumPy arrays.

Stock's expressions with its bounds as operands, so NumPy casts them as
stock's do (a bound float16 cannot hold makes ``numpy.clip`` compute in
float32, cast back to the input's dtype). The bounds are validated by
``Clip.__init__``, which stays stock's.
"""
import numpy

import chainer
from chainer.functions.math import clip

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport retained_inputs

cdef object _clip = numpy.clip
cdef type _number = numpy.number
cdef object _utils = chainer.utils


cdef bint _scalar_bound(object bound):
    """Whether ``bound`` is None or a scalar (a Python int or float, a
    NumPy number): arrays broadcast the output, and other objects compare
    in their own code, both stock's."""
    return (bound is None or type(bound) is float or type(bound) is int
            or isinstance(bound, _number))


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Clip.forward_cpu: numpy.clip(x, x_min, x_max) cast to x's dtype.
    if len(inputs) != 1:
        return NOT_HANDLED
    x, = inputs
    x_min = node.x_min
    x_max = node.x_max
    if (not _scalar_bound(x_min) or not _scalar_bound(x_max)
            or (x_min is None and x_max is None)):
        return NOT_HANDLED
    cdef int raised
    saved = quiet_begin()
    try:
        y = _utils.force_array(_clip(x, x_min, x_max), x.dtype)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    retain_inputs(node, (0,))
    return y,


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Clip.backward: ClipGrad(x, x_min, x_max).apply((gy,)): its __init__
    # makes cond (True times x_min <= x, times x <= x_max, for the bounds
    # given), its type check asks for a float gy, its forward_cpu is
    # gy * cond cast to gy's dtype.
    x_min = func.x_min
    x_max = func.x_max
    if (not _scalar_bound(x_min) or not _scalar_bound(x_max)
            or (x_min is None and x_max is None)
            or func._input_indexes_to_retain != (0,)):
        return NOT_HANDLED
    xs = retained_inputs(func, [])
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if xs is None or gy is None:
        return NOT_HANDLED
    x, = xs
    if gy.dtype.kind != 'f' or gy.shape != x.shape:
        return NOT_HANDLED
    cdef object cond = True
    cdef int raised
    saved = quiet_begin()
    try:
        if x_min is not None:
            cond *= (x_min <= x)
        if x_max is not None:
            cond *= (x <= x_max)
        gx = _utils.force_array(gy * cond, gy.dtype)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return (new_grad(gx, grad_requires_grad(gy_var)),)


ENTRIES = (
    compiled(clip.Clip, _forward,
             ('forward', 'forward_cpu', 'retain_inputs'),
             _backward, backward_callees=(
                 (clip.ClipGrad, '__init__'),
                 (clip.ClipGrad, 'check_type_forward'),
                 (clip.ClipGrad, 'forward'),
                 (clip.ClipGrad, 'forward_cpu')),
             type_check=()),
)
