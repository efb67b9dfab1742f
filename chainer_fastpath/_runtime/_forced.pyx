# cython: boundscheck=True, wraparound=True
"""``forced(y)``: ``chainer.utils.force_array(y)`` where a compiled forward
reproduces a stock forward that calls it on its result;
``forced_quietly``: the same of one NumPy call made quietly.

The replacement of ``force_array`` is the entry point's
(``_force_array.pyx``); its ``bind`` hands it in with
:func:`install_force_array`. While it is the installed function, an
ndarray is its own result and is returned without the call, counted as
the replacement counts it; otherwise the installed function is called, as
stock's code calls it.
"""
import numpy

from chainer import utils

from cpython.object cimport PyObject

from chainer_fastpath._core._dicts cimport cfp_dict_item, cfp_item_memo
from chainer_fastpath._core._fpe cimport acts, quiet_begin, quiet_end
from chainer_fastpath._core._stats cimport EntryStats
from chainer_fastpath._core import _stats

cdef EntryStats _stats_force = _stats.entry('utils.force_array')
cdef type _ndarray = numpy.ndarray
cdef dict _utils_globals = utils.__dict__
cdef cfp_item_memo _installed_read
# As installed by the entry point's bind.
cdef object _replacement = None
cdef bint _ndarray_is_never_scalar = False


cdef int install_force_array(object replacement,
                             bint ndarray_is_never_scalar) except -1:
    """``replacement``: the patch's ``force_array``, which returns an
    ndarray itself where ``ndarray_is_never_scalar``."""
    global _replacement, _ndarray_is_never_scalar
    _replacement = replacement
    _ndarray_is_never_scalar = ndarray_is_never_scalar
    return 0


cdef object forced(object y):
    """``chainer.utils.force_array(y)``, looked up as a compiled forward's
    stock code looks it up: ``y`` itself, without the call, for an ndarray
    while the installed function is the patch's."""
    if (type(y) is _ndarray and _ndarray_is_never_scalar
            and cfp_dict_item(&_installed_read, _utils_globals, 'force_array')
            == <PyObject *>_replacement):
        _stats_force.fast += 1
        return y
    return utils.force_array(y)


cdef object forced_quietly(object ufunc, object a, object b=None,
                           object dtype=None):
    """``force_array(ufunc(a[, b][, dtype=dtype]))``, a stock forward's
    NumPy call on ndarrays, NumPy acting on no floating-point exception;
    None where it would have acted on one the call raised: the work is
    then stock's, which acts from its own line."""
    cdef int raised
    saved = quiet_begin()
    try:
        if dtype is not None:
            y = forced(ufunc(a, dtype=dtype))
        elif b is None:
            y = forced(ufunc(a))
        else:
            y = forced(ufunc(a, b))
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return None
    return y
