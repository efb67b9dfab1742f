# cython: boundscheck=True, wraparound=True
"""Compiled ``Maximum``: forward and backward on NumPy arrays; what
``minimum.pyx`` shares with it (``extremum_forward``,
``extremum_operands``, ``summed_grads``).

Ties go to ``x1``'s gradient, as stock's ``x1 >= x2`` sends them; a NaN
compares false, so its gradient goes to ``x2``.
"""
import numpy

import chainer
from chainer.functions.math import maximum

from chainer_fastpath._core._attrs cimport retain_inputs
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled, nodeless
from chainer_fastpath._core._retained cimport float_operands

cdef object _maximum = numpy.maximum
cdef object _where = numpy.where
cdef object _utils = chainer.utils


cdef object extremum_forward(object node, tuple inputs, object ufunc):
    """Maximum's and Minimum's forward on NumPy arrays:
    ``force_array(ufunc(x1, x2))``, which may broadcast, both inputs
    retained. Other dtypes, and shapes that do not broadcast (type_check
    off), are stock's."""
    if len(inputs) != 2:
        return NOT_HANDLED
    x1, x2 = inputs
    if x1.dtype.kind != 'f' or x2.dtype != x1.dtype:
        return NOT_HANDLED
    cdef int raised
    saved = quiet_begin()
    try:
        y = _utils.force_array(ufunc(x1, x2))
    except ValueError:
        return NOT_HANDLED
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    retain_inputs(node, (0, 1))
    return y,


cdef tuple extremum_operands(object func, tuple grad_outputs):
    """``(gy, its array, x1, x2)`` of Maximum's or Minimum's backward: the
    retained inputs, of gy's floating dtype; or None."""
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    if gy is None:
        return None
    xs = float_operands(func, gy, False)
    if xs is None:
        return None
    return gy_var, gy, xs[0], xs[1]


cdef object summed_grads(object gy_var, object gx1, object gx2, object x1,
                         object x2):
    """Both gradients of Maximum's and Minimum's gradient nodes (the
    stock backward returns both): ``utils.sum_to`` of each to its input's
    shape; or NOT_HANDLED where NumPy would act on a floating-point
    exception of the sums."""
    cdef int raised
    saved = quiet_begin()
    try:
        gx1 = _utils.sum_to(gx1, x1.shape)
        gx2 = _utils.sum_to(gx2, x2.shape)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    cdef bint rg = grad_requires_grad(gy_var)
    return new_grad(gx1, rg), new_grad(gx2, rg)


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Maximum.forward_cpu.
    return extremum_forward(node, inputs, _maximum)


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Maximum.backward: MaximumGrad(x1, x2).apply((gy,)), a node without a
    # type check: its __init__ keeps cond = x1 >= x2 and the shapes, its
    # forward_cpu takes gy where cond holds for x1 and where it does not
    # for x2 (0 of gy's dtype elsewhere), each summed to its input's
    # shape.
    args = extremum_operands(func, grad_outputs)
    if args is None:
        return NOT_HANDLED
    gy_var, gy, x1, x2 = args
    cond = x1 >= x2     # a comparison: no floating-point exception
    if cond.shape != gy.shape:
        return NOT_HANDLED
    zero = gy.dtype.type(0)
    # where() copies: no floating-point operation.
    gx1 = _utils.force_array(_where(cond, gy, zero))
    gx2 = _utils.force_array(_where(cond, zero, gy))
    return summed_grads(gy_var, gx1, gx2, x1, x2)


ENTRIES = (
    nodeless(compiled(
        maximum.Maximum, _forward,
        ('forward', 'forward_cpu', 'retain_inputs'),
        _backward, backward_callees=(
            (maximum.MaximumGrad, '__init__'),
            (maximum.MaximumGrad, 'check_type_forward'),
            (maximum.MaximumGrad, 'forward'),
            (maximum.MaximumGrad, 'forward_cpu')),
        type_check=())),
)
