"""Fast path for ``chainer.utils.force_array``, which every elementwise
forward calls on its result.

For an exact ``numpy.ndarray`` stock's ``numpy.isscalar(x)`` is False (an
ndarray is not a NumPy scalar, not in ``numpy.ScalarType`` and not a
``numbers.Number``), so the array, or its ``astype``, is returned without
asking; that question alone costs more than the rest of a small forward.
A NumPy scalar (``numpy.generic``, what NumPy returns for a 0-d result) is
a scalar: it is made an array, ``numpy.array(x[, dtype])``, as stock does.
Anything else takes the original.
"""
import numpy

from chainer import utils

from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats

cdef EntryStats _stats_force = _stats.entry('utils.force_array')
cdef object _original = None
cdef type _ndarray = numpy.ndarray
cdef type _generic = numpy.generic
cdef object _array = numpy.array
# Checked once when bound: should ndarray ever count as a scalar, the fast
# path steps aside.
cdef bint _ndarray_is_never_scalar = False


TARGETS = ((utils, 'force_array'),)


def bind(owner, attribute, original):
    """Keeps the stock ``force_array`` to fall back to; returns its
    replacement."""
    global _original, _ndarray_is_never_scalar
    _original = original
    _ndarray_is_never_scalar = not numpy.isscalar(numpy.empty(0))
    return force_array


def force_array(x, dtype=None):
    """Drop-in for ``chainer.utils.force_array``."""
    if type(x) is _ndarray and _ndarray_is_never_scalar:
        _stats_force.fast += 1
        if dtype is None:
            return x
        return x.astype(dtype, copy=False)
    if isinstance(x, _generic):
        _stats_force.fast += 1
        if dtype is None:
            return _array(x)
        return _array(x, dtype)
    _stats_force.fallback('not an ndarray (a scalar is made an array)')
    return _original(x, dtype)
