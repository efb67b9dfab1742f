# cython: boundscheck=True, wraparound=True
"""Compiled ``Mean``: forward and backward on NumPy arrays."""
import numpy

import chainer
import chainer.functions
from chainer.functions.array import broadcast
from chainer.functions.array import reshape
from chainer.functions.math import average
from chainer.functions.math import basic_math

from chainer_fastpath._core import _attrs
from chainer_fastpath._core._attrs cimport (
    cfp_attr, cfp_attr_enable, cfp_getattr as get, cfp_setattr as put,
    get_site, set_site)
from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport (
    acts, clear_flags, fetestexcept, quiet_begin, quiet_end, watched)
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_FLOAT, cfp_data, cfp_typenum, size_of)
from chainer_fastpath._core._reductions cimport sum_middle
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._ufunc_loop cimport Reduction
from chainer_fastpath._runtime._sum_grads cimport spread_grad

cfp_attr_enable(_attrs.FAST)

cdef object _utils = chainer.utils
cdef Reduction _sum_all = Reduction(numpy.add)
cdef type _ndarray = numpy.ndarray
cdef cfp_attr _get_axis = get_site('axis')
cdef cfp_attr _get_keepdims = get_site('keepdims')
cdef cfp_attr _set_multiplier = set_site('multiplier')
# The largest counts a float32 and a float64 hold exactly.
cdef Py_ssize_t _FLOAT_EXACT = 1 << 24
cdef Py_ssize_t _DOUBLE_EXACT = 1LL << 53


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Mean.forward.
    keepdims = get(node, &_get_keepdims)
    if len(inputs) != 1 or not (type(keepdims) is bool
                                or type(keepdims) is int):
        # Another keepdims (numpy.bool_) makes NumPy warn: once, in stock's
        # forward, not also here before a flag sends the node to stock.
        return NOT_HANDLED
    x, = inputs
    axis = get(node, &_get_axis)
    cdef Py_ssize_t size = 0
    if axis is None:
        if type(x) is _ndarray:
            size = size_of(x)
        # An empty x: Python's ZeroDivisionError, with its message.
        put(node, &_set_multiplier,
            1.0 / <double>size if size > 0 else 1.0 / x.size)
    else:
        divider = 1
        for a in axis:
            divider *= x.shape[a]
        put(node, &_set_multiplier, 1.0 / divider)
    if type(axis) is tuple and len(<tuple>axis) == 1:
        y = _mean_middle(x, (<tuple>axis)[0], keepdims)
        if y is not None:
            return y,
    elif axis is None and type(keepdims) is bool and size > 0:
        y = _mean_all(x, keepdims, size)
        if y is not None:
            return y,
    cdef int raised
    saved = quiet_begin()
    try:
        y = _utils.force_array(x.mean(axis=axis, keepdims=keepdims))
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return y,


cdef object _mean_middle(object x, object axis, bint keepdims):
    """``x.mean(axis, keepdims=keepdims)`` as NumPy's ``_mean`` makes it,
    where ``sum_middle`` makes its sum: that sum divided in place by the
    count of items as x's type. None, nothing done, elsewhere, and where
    the division raises a flag NumPy's error state acts on."""
    y = sum_middle(x, axis, keepdims)
    if y is None:
        return None
    cdef Py_ssize_t n = size_of(y)
    cdef Py_ssize_t count = size_of(x) // n
    cdef int flags = watched()
    clear_flags(flags)
    if cfp_typenum(y) == CFP_NPY_FLOAT:
        _divide(<float *>cfp_data(y), n, <float>count)
    else:
        _divide(<double *>cfp_data(y), n, <double>count)
    return None if fetestexcept(flags) else y


cdef object _mean_all(object x, bint keepdims, Py_ssize_t count):
    """``force_array(x.mean(keepdims=keepdims))`` of ``count`` items:
    NumPy's sum of all items (``Reduction.all``) divided in place by the
    count, where the count is exact in x's type (NumPy divides a float32
    sum by the count as float64, then rounds; a quotient of two float32
    values rounds the same either way). None, nothing done, elsewhere, and
    where the sum or the division raises a flag NumPy's error state acts
    on."""
    cdef int raised = 0
    y = _sum_all.all(x, keepdims, &raised)
    if y is None or acts(raised):
        return None
    cdef bint single = cfp_typenum(y) == CFP_NPY_FLOAT
    if count > (_FLOAT_EXACT if single else _DOUBLE_EXACT):
        return None
    cdef int flags = watched()
    clear_flags(flags)
    if single:
        _divide(<float *>cfp_data(y), 1, <float>count)
    else:
        _divide(<double *>cfp_data(y), 1, <double>count)
    return None if fetestexcept(flags) else y


ctypedef fused _real:
    float
    double


cdef void _divide(_real *y, Py_ssize_t n, _real count) noexcept nogil:
    # true_divide(y, count, out=y): one IEEE division per item.
    cdef Py_ssize_t i
    for i in range(n):
        y[i] = y[i] / count


cdef object _backward(object func, tuple indexes, tuple grad_outputs):
    # Mean.backward: gy * multiplier (a MulConstant node: the multiplier
    # in gy's dtype times gy), then as Sum.backward.
    gy_var = grad_outputs[0]
    gy = grad_array(gy_var)
    multiplier = func.multiplier
    if gy is None or type(multiplier) is not float:
        return NOT_HANDLED
    cdef int raised
    saved = quiet_begin()
    try:
        gy = _utils.force_array(gy.dtype.type(multiplier) * gy)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    return spread_grad(
        func, new_grad(gy, grad_requires_grad(gy_var)), gy)


ENTRIES = (
    compiled(average.Mean, _forward, ('forward',),
             _backward, backward_callees=(
                 (chainer.Variable, '__mul__'),
                 (basic_math.MulConstant, '__init__'),
                 (basic_math.MulConstant, 'check_type_forward'),
                 (basic_math.MulConstant, 'forward'),
                 (basic_math, '_preprocess_const'),
                 (chainer.functions, 'reshape'),
                 (chainer.functions, 'broadcast_to'),
                 (reshape.Reshape, '__init__'),
                 (reshape.Reshape, 'check_type_forward'),
                 (reshape.Reshape, 'forward'),
                 (reshape, '_count_unknown_dims'),
                 (broadcast.BroadcastTo, 'check_type_forward'),
                 (broadcast.BroadcastTo, 'forward')),
             type_check=('axis',)),
)
