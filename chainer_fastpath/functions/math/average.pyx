# cython: boundscheck=True, wraparound=True
"""Compiled ``Mean``: forward and backward on NumPy arrays."""
import chainer
import chainer.functions
from chainer.functions.array import broadcast
from chainer.functions.array import reshape
from chainer.functions.math import average
from chainer.functions.math import basic_math

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport (
    acts, clear_flags, fetestexcept, quiet_begin, quiet_end, watched)
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_FLOAT, cfp_data, cfp_dims, cfp_nd, cfp_typenum)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._runtime._sum_grads cimport spread_grad
from chainer_fastpath.functions.math.sum cimport sum_middle

cdef object _utils = chainer.utils


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Mean.forward.
    keepdims = node.keepdims
    if len(inputs) != 1 or not (type(keepdims) is bool
                                or type(keepdims) is int):
        # Another keepdims (numpy.bool_) makes NumPy warn: once, in stock's
        # forward, not also here before a flag sends the node to stock.
        return NOT_HANDLED
    x, = inputs
    axis = node.axis
    if axis is None:
        node.multiplier = 1.0 / x.size
    else:
        divider = 1
        for a in axis:
            divider *= x.shape[a]
        node.multiplier = 1.0 / divider
    if type(axis) is tuple and len(<tuple>axis) == 1:
        y = _mean_middle(x, (<tuple>axis)[0], keepdims)
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
    cdef Py_ssize_t n = 1, k
    for k in range(cfp_nd(y)):
        n *= cfp_dims(y)[k]
    cdef Py_ssize_t count = x.size // n
    cdef int flags = watched()
    clear_flags(flags)
    if cfp_typenum(y) == CFP_NPY_FLOAT:
        _divide(<float *>cfp_data(y), n, <float>count)
    else:
        _divide(<double *>cfp_data(y), n, <double>count)
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
