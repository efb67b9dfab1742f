# cython: boundscheck=True, wraparound=True
"""Compiled ``HuberLoss``: forward and backward on NumPy arrays."""
cimport cython
from libc.math cimport fabs, isnan

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
from chainer_fastpath._core._fpe cimport (
    acts, clear_flags, fetestexcept, quiet_begin, quiet_end, watched)
from chainer_fastpath._core._grads cimport (
    grad_array, grad_requires_grad, new_grad)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_C_CONTIGUOUS, CFP_NPY_DOUBLE, CFP_NPY_FLOAT,
    canonical, cfp_data, cfp_dims, cfp_flags, cfp_nd, cfp_strides,
    cfp_typenum, new_like, numpy_struct_matches, size_of)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled
from chainer_fastpath._core._retained cimport requires_grad_of, retained_inputs

cdef object _abs = numpy.abs
cdef object _square = numpy.square
cdef object _maximum = numpy.maximum
cdef object _minimum = numpy.minimum
cdef object _clip = numpy.clip
cdef object _utils = chainer.utils
cdef type _ndarray = numpy.ndarray
cdef object _numpy = numpy


cdef object _forward(object node, tuple inputs, ConfigView config):
    # HuberLoss.forward on NumPy arrays.
    if len(inputs) != 2:
        return NOT_HANDLED
    x0, x1 = inputs
    reduce = node.reduce
    y = _fused_forward(x0, x1, node.delta)
    if y is not None:
        if reduce == 'sum_along_second_axis':
            y = _sum_second_axis(y)
            if y is None:
                return NOT_HANDLED
        retain_inputs(node, (0, 1))
        return y,
    dtype = x0.dtype
    if dtype.kind != 'f':
        # Unchecked types: an int delta out of an integer dtype's range
        # makes NumPy warn, from the frame converting it: stock's.
        return NOT_HANDLED
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
        if reduce == 'sum_along_second_axis':
            y = y.sum(axis=1)
    finally:
        # An exception after a flag NumPy acts on is stock's to raise, if
        # stock reaches it.
        raised = quiet_end(saved)
        if acts(raised):
            return NOT_HANDLED
    retain_inputs(node, (0, 1))
    return y,


cdef object _sum_second_axis(object y):
    # y.sum(axis=1), None where the error state acts on a flag it raised.
    cdef int raised
    saved = quiet_begin()
    try:
        y = y.sum(axis=1)
    finally:
        raised = quiet_end(saved)
    return None if acts(raised) else y


cdef bint _dense_pair(object a, object b):
    # Two C-contiguous, aligned ndarrays of one shape and one canonical
    # float32 or float64 dtype.
    if (type(a) is not _ndarray or type(b) is not _ndarray
            or not numpy_struct_matches() or not canonical(a)
            or not canonical(b)):
        return False
    cdef int typenum = cfp_typenum(a)
    cdef int need = CFP_NPY_C_CONTIGUOUS | CFP_NPY_ALIGNED
    if ((typenum != CFP_NPY_FLOAT and typenum != CFP_NPY_DOUBLE)
            or cfp_typenum(b) != typenum or cfp_flags(a) & need != need
            or cfp_flags(b) & need != need or cfp_nd(a) != cfp_nd(b)):
        return False
    cdef int k
    for k in range(cfp_nd(a)):
        if cfp_dims(a)[k] != cfp_dims(b)[k]:
            return False
    return True


cdef bint _plain_delta(object delta):
    # A delta whose square, in float32 as in float64, is a positive normal
    # number: no tie of the maximum and minimum below is then between
    # zeros of two signs, and each operand is exact in a double.
    if type(delta) is int:
        if not 0 < delta < 2 ** 53:
            return False
    elif type(delta) is not float:
        return False
    cdef double d = delta
    cdef float f = <float>d
    return (1e-18 < d < 1e18 and <float>(f * f) >= 1.17549435e-38
            and not f * f > 3.4e38)


cdef object _fused_forward(object x0, object x1, object delta):
    """Stock's forward but the reduction, ``0.5 * minimum(square(d),
    maximum(2 * delta * |d| - delta * delta, delta * delta))`` with
    ``d = x0 - x1`` and each operation rounded in x0's type as NumPy's
    loops round it, one pass per item. None, nothing done, unless x0 and x1
    are ``_dense_pair`` arrays, ``delta`` is ``_plain_delta`` and NumPy's
    functions are its own; and where an item is a NaN (whose payload
    NumPy's loops choose) or the error state acts on a flag raised."""
    if (not _dense_pair(x0, x1) or not _plain_delta(delta)
            or _numpy.abs is not _abs or _numpy.square is not _square
            or _numpy.maximum is not _maximum
            or _numpy.minimum is not _minimum):
        return None
    y = new_like(x0)
    if y is None:
        return None
    cdef Py_ssize_t n = size_of(x0)
    cdef int flags = watched()
    cdef bint nan
    clear_flags(flags)
    if cfp_typenum(x0) == CFP_NPY_FLOAT:
        nan = _huber[float](<float *>cfp_data(x0), <float *>cfp_data(x1),
                            <float *>cfp_data(y), n, <float>delta)
    else:
        nan = _huber[double](<double *>cfp_data(x0), <double *>cfp_data(x1),
                             <double *>cfp_data(y), n, <double>delta)
    return None if nan or fetestexcept(flags) else y


ctypedef fused _real:
    float
    double


@cython.cdivision(True)
cdef bint _huber(const _real *x0, const _real *x1, _real *y, Py_ssize_t n,
                 _real delta) noexcept nogil:
    cdef _real twice = 2 * delta, square = delta * delta, half = 0.5
    cdef _real d, linear
    cdef bint nan = False
    cdef Py_ssize_t i
    for i in range(n):
        d = fabs(x0[i] - x1[i])
        linear = d * twice
        linear = linear - square
        # NumPy's maximum and minimum: a NaN operand is the result.
        linear = linear if linear >= square or isnan(linear) else square
        d = d * d
        y[i] = (d if d <= linear or isnan(d) else linear) * half
        nan |= isnan(y[i])
    return nan


cdef object _fused_backward(object x0, object x1, object gy, Py_ssize_t rows,
                            object delta):
    """``(gx, -gx)``, ``gx = gy * clip(x0 - x1, -delta, delta)`` with ``gy``
    read as broadcast to x0's shape (its item ``(i, j, r)`` from
    ``gy[i, r]`` when ``rows`` > 0, the rows of x0's second axis; else from
    ``gy``'s own item, or its one item where every stride is 0), each
    operation rounded in x0's type as NumPy's loops round it. None, nothing
    done, where ``_fused_forward`` would decline or gy is not aligned, in
    x0's dtype and C-contiguous or all one item."""
    if (not _dense_pair(x0, x1) or not _plain_delta(delta)
            or type(gy) is not _ndarray or not canonical(gy)
            or cfp_typenum(gy) != cfp_typenum(x0)
            or not cfp_flags(gy) & CFP_NPY_ALIGNED
            or _numpy.clip is not _clip):
        return None
    # gy's items in C order, or one item read for all (the broadcast
    # gradient of a mean or sum of the loss).
    cdef bint one = not cfp_flags(gy) & CFP_NPY_C_CONTIGUOUS
    cdef int k
    if one:
        if rows > 0:
            return None
        for k in range(cfp_nd(gy)):
            if cfp_strides(gy)[k] != 0:
                return None
    gx = new_like(x0)
    ngx = new_like(x0)
    if gx is None or ngx is None:
        return None
    cdef Py_ssize_t n = size_of(x0), outer = 1, inner = n, middle = 1
    if rows > 0:
        outer = cfp_dims(x0)[0]
        middle = rows
        inner = n // (outer * middle) if n else 0
    cdef int flags = watched()
    cdef bint nan
    clear_flags(flags)
    if cfp_typenum(x0) == CFP_NPY_FLOAT:
        nan = _huber_grad[float](
            <float *>cfp_data(x0), <float *>cfp_data(x1),
            <float *>cfp_data(gy), <float *>cfp_data(gx),
            <float *>cfp_data(ngx), outer, middle, inner, rows > 0, one,
            <float>delta)
    else:
        nan = _huber_grad[double](
            <double *>cfp_data(x0), <double *>cfp_data(x1),
            <double *>cfp_data(gy), <double *>cfp_data(gx),
            <double *>cfp_data(ngx), outer, middle, inner, rows > 0, one,
            <double>delta)
    return None if nan or fetestexcept(flags) else (gx, ngx)


cdef bint _huber_grad(const _real *x0, const _real *x1, const _real *gy,
                      _real *gx, _real *ngx, Py_ssize_t outer,
                      Py_ssize_t middle, Py_ssize_t inner, bint spread,
                      bint one, _real delta) noexcept nogil:
    # NumPy's clip: a NaN stays; else d below lo is lo, above hi hi.
    cdef _real hi = delta, lo = -delta, d, g
    cdef bint nan = False
    cdef Py_ssize_t i, _j, r, e = 0
    for i in range(outer):
        for _j in range(middle):
            for r in range(inner):
                d = x0[e] - x1[e]
                if d < lo:
                    d = lo
                elif d > hi:
                    d = hi
                g = gy[0 if one else i * inner + r if spread else e] * d
                gx[e] = g
                ngx[e] = -g
                nan |= isnan(g)
                e += 1
    return nan


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
    cdef Py_ssize_t rows = 0
    cdef bint along = func.reduce == 'sum_along_second_axis'
    if along:
        if len(shape) < 2 or gy.shape != shape[:1] + shape[2:]:
            return NOT_HANDLED
        rows = shape[1]
    elif gy.shape != shape:
        return NOT_HANDLED
    cdef bint rg = (grad_requires_grad(gy_var)
                    or requires_grad_of(func.inputs[0])
                    or requires_grad_of(func.inputs[1]))
    pair = _fused_backward(x0, x1, gy, rows, delta)
    if pair is not None:
        return new_grad(pair[0], rg), new_grad(pair[1], rg)
    if along:
        gy = gy.reshape(gy.shape[:1] + (1,) + gy.shape[1:])
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
