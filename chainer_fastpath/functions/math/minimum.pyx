# cython: boundscheck=True, wraparound=True
"""Compiled ``Minimum``: forward and backward on NumPy arrays.

Ties go to ``x1``'s gradient, as stock's ``x1 <= x2`` sends them; a NaN
compares false, so its gradient goes to ``x2``. The gradients are products
with the conditions (an infinite gradient times false is NaN, a negative
one -0), as stock's are.
"""
import numpy

import chainer
from chainer.functions.math import minimum

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled, nodeless
from chainer_fastpath.functions.math.maximum cimport (
    extremum_forward, extremum_operands, summed_grads)

cdef object _minimum = numpy.minimum
cdef object _utils = chainer.utils


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Minimum.forward on NumPy arrays.
    return extremum_forward(node, inputs, _minimum)


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Minimum.backward: MinimumGrad(x1, x2).apply((gy,)), a node without a
    # type check whose forward_cpu is gy * (x1 <= x2) and gy * (x1 > x2),
    # each summed to its input's shape.
    args = extremum_operands(func, grad_outputs)
    if args is None:
        return NOT_HANDLED
    gy_var, gy, x1, x2 = args
    le = x1 <= x2       # a comparison: no floating-point exception
    if le.shape != gy.shape:
        return NOT_HANDLED
    cdef int raised
    saved = quiet_begin()
    try:
        gx1 = _utils.force_array(gy * le)
        gx2 = _utils.force_array(gy * (x1 > x2))
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return summed_grads(gy_var, gx1, gx2, x1, x2)


ENTRIES = (
    nodeless(compiled(
        minimum.Minimum, _forward, ('forward', 'retain_inputs'),
        _backward, backward_callees=(
            (minimum.MinimumGrad, '__init__'),
            (minimum.MinimumGrad, 'check_type_forward'),
            (minimum.MinimumGrad, 'forward'),
            (minimum.MinimumGrad, 'forward_cpu')),
        type_check=())),
)
