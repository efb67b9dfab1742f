"""Floating-point exceptions of the engine's own gradient sums, acted on as
stock's would be.

The engine sums gradients with NumPy's error handling off (``_core/_fpe``:
an in-place sum cannot be redone). Where NumPy would have acted on a flag
such a sum raised, stock's ``F.add`` would have warned, raised or called
back from ``Add.forward``: that forward runs here on two elements of the
dtype whose sum raises exactly those flags (an IEEE sum raises no others),
so that the same warnings come from its line, or the same error or
callback. The sum itself is the one already made.
"""
import numpy

from chainer.functions.math import basic_math

from chainer_fastpath._core._fpe cimport FE_INVALID, FE_OVERFLOW

cdef object _np_array = numpy.array


cdef void replay_sum_exceptions(object dtype, int raised) except *:
    """What stock's ``F.add`` of two gradients of ``dtype`` whose sum
    raised the flags ``raised`` does about them (warns, raises, calls back,
    as errstate says) from ``Add.forward``: that forward on two elements
    whose sum raises the same flags (a sum raises no others)."""
    if dtype.kind != 'f' and dtype.kind != 'c':
        return
    big = numpy.finfo(dtype).max
    inf = numpy.inf
    a = []
    b = []
    if raised & FE_OVERFLOW:
        a.append(big)
        b.append(big)
    if raised & FE_INVALID:
        a.append(inf)
        b.append(-inf)
    if a:
        basic_math.Add().forward((_np_array(a, dtype), _np_array(b, dtype)))
