"""Reductions over one axis of a C-contiguous float array, in C: the
sum over an axis that rows follow, the largest or smallest item and its
index. Each gives NumPy's bits or declines (None, nothing done), leaving
the case to NumPy."""
import numpy

from chainer_fastpath._core._fpe cimport (
    buffer_size, clear_flags, fetestexcept, watched)
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_C_CONTIGUOUS, CFP_NPY_DOUBLE, CFP_NPY_FLOAT,
    canonical, cfp_data, cfp_dims, cfp_flags, cfp_nd, cfp_typenum, empty,
    new_shaped, numpy_struct_matches)
from chainer_fastpath._core._rows cimport (
    CFP_SELECT_NAN, CFP_SELECT_ZERO, cfp_select_middle_d, cfp_select_middle_f,
    cfp_sum_last_d, cfp_sum_last_f, cfp_sum_middle_d, cfp_sum_middle_f)

cdef type _ndarray = numpy.ndarray
cdef object _INT32 = numpy.dtype(numpy.int32)


cdef int reduced_axis(object x, object axis, bint keepdims,
                      Py_ssize_t *outer, Py_ssize_t *n, Py_ssize_t *inner,
                      Py_ssize_t *dims) except -2:
    """For a reduction of ``x`` over ``axis`` (an int inside x, or None
    for every item): x read as (outer, n, inner) with n the items reduced,
    and the result's shape, ``dims`` (room for 32) and the rank returned.
    -1, nothing set, unless ``x`` is a C-contiguous, aligned, non-empty
    ndarray of a canonical float32 or float64 dtype."""
    if (type(x) is not _ndarray or not numpy_struct_matches()
            or not canonical(x)
            or (cfp_typenum(x) != CFP_NPY_FLOAT
                and cfp_typenum(x) != CFP_NPY_DOUBLE)
            or (cfp_flags(x) & (CFP_NPY_ALIGNED | CFP_NPY_C_CONTIGUOUS)
                != (CFP_NPY_ALIGNED | CFP_NPY_C_CONTIGUOUS))):
        return -1
    cdef int nd = cfp_nd(x), k, a, out_nd = 0
    if nd > 32:
        return -1
    if axis is None:
        a = -1
    elif type(axis) is int and -nd <= axis < nd:
        a = axis + nd if axis < 0 else axis
    else:
        return -1
    cdef Py_ssize_t before = 1, along = 1, after = 1
    for k in range(nd):
        if a == -1 or k == a:
            along *= cfp_dims(x)[k]
            if keepdims:
                dims[out_nd] = 1
                out_nd += 1
            continue
        if k < a:
            before *= cfp_dims(x)[k]
        else:
            after *= cfp_dims(x)[k]
        dims[out_nd] = cfp_dims(x)[k]
        out_nd += 1
    if before * along * after == 0:
        return -1
    outer[0], n[0], inner[0] = before, along, after
    return out_nd


cdef object sum_middle(object x, object axis, bint keepdims):
    """``numpy.add.reduce(x, axis, keepdims=keepdims)``: where rows of at
    least two items follow ``axis``, NumPy adds whole rows in order
    (``cfp_sum_middle``); over the last axis (nothing but axes of one item
    after it) it sums each row pairwise (``cfp_sum_last``) where a row
    fits in NumPy's buffer (``numpy.setbufsize``; a longer one is summed
    a buffer at a time) and this NumPy sums as it does. None, with
    nothing done, unless ``x`` is a C-contiguous, aligned, non-empty
    ndarray of a canonical float32 or float64 dtype and ``axis`` an int
    inside it; also where a sum is a NaN (whose payload NumPy's loop
    chooses) or raises a flag NumPy's error state acts on: NumPy computes
    those."""
    cdef Py_ssize_t outer, n, inner
    cdef Py_ssize_t dims[32]
    if axis is None:    # one row of every item, summed pairwise
        return None
    cdef int out_nd = reduced_axis(x, axis, keepdims, &outer, &n, &inner,
                                   dims)
    if out_nd < 0 or (inner < 2 and not (
            _pairwise_as_numpy and n <= buffer_size())):
        return None
    y = new_shaped(x, out_nd, dims)
    if y is None:
        return None
    cdef int flags = watched()
    cdef bint nan
    clear_flags(flags)
    if inner == 1:
        nan = _sum_last(y, x, outer, n)
    elif cfp_typenum(x) == CFP_NPY_FLOAT:
        nan = cfp_sum_middle_f(<float *>cfp_data(y),
                               <const float *>cfp_data(x), outer, n, inner)
    else:
        nan = cfp_sum_middle_d(<double *>cfp_data(y),
                               <const double *>cfp_data(x), outer, n, inner)
    if nan or fetestexcept(flags):
        return None
    return y


cdef inline bint _sum_last(object y, object x, Py_ssize_t outer,
                           Py_ssize_t n) noexcept:
    if cfp_typenum(x) == CFP_NPY_FLOAT:
        return cfp_sum_last_f(<float *>cfp_data(y),
                              <const float *>cfp_data(x), outer, n)
    return cfp_sum_last_d(<double *>cfp_data(y), <const double *>cfp_data(x),
                          outer, n)


cdef bint _sums_last_as_numpy():
    """Whether ``cfp_sum_last`` gives this NumPy's bits: rows of every
    length class of the pairwise sum, values whose sums round differently
    in any other order, and negative zeros (whose sum's sign depends on
    the zero the sum starts from)."""
    if buffer_size() < 8192:
        return False
    rng = numpy.random.RandomState(0)
    cdef Py_ssize_t n
    for dtype in (numpy.float32, numpy.float64):
        for n in (1, 2, 7, 8, 9, 15, 16, 17, 127, 128, 129, 136, 255, 256,
                  300, 1000, 4097, 8192):
            x = (rng.standard_normal((3, n))
                 * 10.0 ** rng.randint(-6, 7, (3, n))).astype(dtype)
            x[2] = -0.0
            y = numpy.empty(3, dtype)
            _sum_last(y, x, 3, n)
            if y.tobytes() != numpy.add.reduce(x, 1).tobytes():
                return False
    return True


cdef bint _pairwise_as_numpy = (numpy_struct_matches()
                                and _sums_last_as_numpy())


cdef object select_middle(object x, object axis, bint keepdims,
                          bint largest):
    """``numpy.amax(x, axis, keepdims=keepdims)`` (``amin`` where not
    ``largest``) as a new array, for ``axis`` None or a tuple of one axis:
    the one largest (smallest) value, whichever order NumPy's loops compare
    in, except among zeros of both signs. None, nothing done, unless
    ``reduced_axis`` takes x; also where an item is a NaN or a result a
    zero: NumPy computes those."""
    if type(axis) is tuple:
        if len(<tuple>axis) != 1:
            return None
        axis = (<tuple>axis)[0]
    cdef Py_ssize_t outer, n, inner
    cdef Py_ssize_t dims[32]
    cdef int out_nd = reduced_axis(x, axis, keepdims, &outer, &n, &inner,
                                   dims)
    if out_nd < 0:
        return None
    y = new_shaped(x, out_nd, dims)
    if y is None:
        return None
    cdef int found
    if cfp_typenum(x) == CFP_NPY_FLOAT:
        found = cfp_select_middle_f(<float *>cfp_data(y), NULL,
                                    <const float *>cfp_data(x), outer, n,
                                    inner, largest)
    else:
        found = cfp_select_middle_d(<double *>cfp_data(y), NULL,
                                    <const double *>cfp_data(x), outer, n,
                                    inner, largest)
    return None if found & (CFP_SELECT_NAN | CFP_SELECT_ZERO) else y


cdef object index_middle(object x, object axis, bint largest):
    """``x.argmax(axis).astype(numpy.int32)`` (argmin where not
    ``largest``) as a new array, for ``axis`` None or an int: the first
    index of the largest (smallest) value, as NumPy's loops find it. None,
    nothing done, unless ``reduced_axis`` takes x and the indexes fit an
    int; also where an item is a NaN."""
    cdef Py_ssize_t outer, n, inner
    cdef Py_ssize_t dims[32]
    cdef int out_nd = reduced_axis(x, axis, False, &outer, &n, &inner, dims)
    if out_nd < 0 or n > 2147483647:
        return None
    best = new_shaped(x, out_nd, dims)
    index = _empty_int32(out_nd, dims)
    if best is None or index is None:
        return None
    cdef int found
    if cfp_typenum(x) == CFP_NPY_FLOAT:
        found = cfp_select_middle_f(<float *>cfp_data(best),
                                    <int *>cfp_data(index),
                                    <const float *>cfp_data(x), outer, n,
                                    inner, largest)
    else:
        found = cfp_select_middle_d(<double *>cfp_data(best),
                                    <int *>cfp_data(index),
                                    <const double *>cfp_data(x), outer, n,
                                    inner, largest)
    return None if found & CFP_SELECT_NAN else index


cdef object _empty_int32(int nd, const Py_ssize_t *dims):
    return empty(_INT32, nd, dims)
