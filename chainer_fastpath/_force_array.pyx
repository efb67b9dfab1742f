"""Fast path for ``chainer.utils.force_array``, which every elementwise
forward calls on its result.

For an exact ``numpy.ndarray`` stock's ``numpy.isscalar(x)`` is False (an
ndarray is not a NumPy scalar, not in ``numpy.ScalarType`` and not a
``numbers.Number``), so the array, or its ``astype``, is returned without
asking; that question alone costs more than the rest of a small forward.
A cast to another dtype, which may warn from the original's line, is left
to the original. A NumPy scalar (``numpy.generic``, what NumPy returns for
a 0-d result) is a scalar: it is made an array, ``numpy.array(x)``, as
stock does. Anything else takes the original.
"""
import numpy

from chainer import utils

from chainer_fastpath._core._audit cimport stock_replaced
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats
from chainer_fastpath._runtime._forced cimport install_force_array

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
    # The compiled forwards' forced() returns an ndarray itself while this
    # replacement is installed.
    install_force_array(force_array, _ndarray_is_never_scalar)
    return force_array


def force_array(x, dtype=None):
    """Drop-in for ``chainer.utils.force_array``."""
    replaced = stock_replaced()
    if replaced is not None:
        _stats_force.fallback(replaced)
        return _original(x, dtype)
    if type(x) is _ndarray and _ndarray_is_never_scalar:
        if dtype is None:
            _stats_force.fast += 1
            return x
        # A cast may warn (overflow), from stock's line: only the
        # no-op is taken here.
        x_dtype = x.dtype
        if x_dtype is dtype or x_dtype == dtype:
            _stats_force.fast += 1
            return x.astype(dtype, copy=False)
        _stats_force.fallback('a cast to another dtype')
        return _original(x, dtype)
    if isinstance(x, _generic) and (dtype is None or x.dtype == dtype):
        # numpy.array(x[, dtype]) as stock, without a cast that could warn.
        _stats_force.fast += 1
        return _array(x)
    _stats_force.fallback('not an ndarray (a scalar is made an array)')
    return _original(x, dtype)
