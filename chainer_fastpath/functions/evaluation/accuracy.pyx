# cython: boundscheck=True, wraparound=True
"""Compiled ``Accuracy`` forward (``F.accuracy``) on NumPy arrays.

Stock takes ``y.argmax(axis=1)`` (a transposed copy of the scores, then
the first maximum of each row), compares it with the labels and takes the
mean of the comparisons (with ``ignore_label``, counts). Here one C loop
(``_accuracy.h``) finds each sample's first maximum where it lies and
counts the correct predictions and the ignored labels; the accuracy is then
made of those counts by the same NumPy scalar operations as stock's. The
mean's sum is NumPy's pairwise sum of ones and zeros in ``y``'s dtype,
exact (the count itself) only while every partial sum is: float16 up to
2048 labels, float32 up to 2**24; beyond, the work is stock's.
"""
from libc.stdint cimport int64_t

import numpy

from chainer.functions.evaluation import accuracy

from chainer_fastpath._core._config cimport ConfigView
from chainer_fastpath._core._fpe cimport all_flags, clear_flags
from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_ALIGNED, CFP_NPY_C_CONTIGUOUS, CFP_NPY_DOUBLE, CFP_NPY_FLOAT,
    CFP_NPY_HALF, CFP_NPY_INT, CFP_NPY_LONG, builtin_typenum, cfp_data,
    cfp_dims, cfp_flags, cfp_nd, cfp_strides, numpy_struct_matches)
from chainer_fastpath._core._registry cimport NOT_HANDLED, compiled

cdef extern from "_accuracy.h" nogil:
    int64_t cfp_accuracy_h(const char *y, const Py_ssize_t *ys, Py_ssize_t n,
                           Py_ssize_t classes, Py_ssize_t rest,
                           const char *t, Py_ssize_t ts, int wide,
                           int has_ignore, int64_t ignore, int64_t *ignored)
    int64_t cfp_accuracy_f(const char *y, const Py_ssize_t *ys, Py_ssize_t n,
                           Py_ssize_t classes, Py_ssize_t rest,
                           const char *t, Py_ssize_t ts, int wide,
                           int has_ignore, int64_t ignore, int64_t *ignored)
    int64_t cfp_accuracy_d(const char *y, const Py_ssize_t *ys, Py_ssize_t n,
                           Py_ssize_t classes, Py_ssize_t rest,
                           const char *t, Py_ssize_t ts, int wide,
                           int has_ignore, int64_t ignore, int64_t *ignored)

cdef type _ndarray = numpy.ndarray
cdef object _asarray = numpy.asarray
cdef object _intp = numpy.intp
cdef object _int64 = numpy.int64
cdef int64_t _INT64_MIN = -2 ** 63
cdef int64_t _INT64_MAX = 2 ** 63 - 1


cdef Py_ssize_t _exact_labels(int typenum):
    # The most labels whose count NumPy's sums in that dtype (and the
    # accuracy's cast to it) keep exact.
    if typenum == CFP_NPY_HALF:
        return 2048
    if typenum == CFP_NPY_FLOAT:
        return 1 << 24
    return 1 << 52


cdef object _forward(object node, tuple inputs, ConfigView config):
    # Accuracy.forward_cpu -> _forward(numpy, inputs).
    if len(inputs) != 2 or not numpy_struct_matches():
        return NOT_HANDLED
    y, t = inputs
    if type(y) is not _ndarray or type(t) is not _ndarray:
        return NOT_HANDLED
    ignore_label = node.ignore_label
    if ignore_label is not None and not (
            type(ignore_label) is int
            and _INT64_MIN <= ignore_label <= _INT64_MAX):
        return NOT_HANDLED  # NumPy's casts of another label
    cdef int typenum = builtin_typenum(y)
    cdef int label_num = builtin_typenum(t)
    cdef int nd = cfp_nd(y)
    if ((typenum != CFP_NPY_HALF and typenum != CFP_NPY_FLOAT
            and typenum != CFP_NPY_DOUBLE)
            or (label_num != CFP_NPY_INT and label_num != CFP_NPY_LONG)
            or t.itemsize not in (4, 8) or nd < 2
            or not cfp_flags(y) & CFP_NPY_ALIGNED
            or not cfp_flags(t) & CFP_NPY_ALIGNED):
        return NOT_HANDLED
    cdef Py_ssize_t *dims = cfp_dims(y)
    cdef Py_ssize_t n = dims[0], classes = dims[1], rest = 1, k
    for k in range(2, nd):
        rest *= dims[k]
    cdef Py_ssize_t ys[3]
    ys[0] = cfp_strides(y)[0]
    ys[1] = cfp_strides(y)[1]
    ys[2] = 0
    if nd > 2:
        # The positions as one axis: a C-ordered array's last stride.
        if not cfp_flags(y) & CFP_NPY_C_CONTIGUOUS:
            return NOT_HANDLED
        ys[2] = cfp_strides(y)[nd - 1]
    cdef Py_ssize_t size = t.size
    # argmax(axis=1) of each sample reshaped to t's shape: t's items in C
    # order, one per sample and position.
    if (classes == 0 or size == 0 or size != n * rest
            or size > _exact_labels(typenum)):
        return NOT_HANDLED  # stock's errors, or its sums' rounding
    cdef Py_ssize_t ts
    if cfp_nd(t) == 1:
        ts = cfp_strides(t)[0]
    elif cfp_flags(t) & CFP_NPY_C_CONTIGUOUS:
        ts = t.itemsize
    else:
        return NOT_HANDLED
    cdef const char *ydata = cfp_data(y)
    cdef const char *tdata = cfp_data(t)
    cdef int wide = t.itemsize == 8
    cdef int has_ignore = ignore_label is not None
    cdef int64_t ignore = ignore_label if has_ignore else 0
    cdef int64_t correct, ignored
    with nogil:
        if typenum == CFP_NPY_HALF:
            correct = cfp_accuracy_h(ydata, ys, n, classes, rest, tdata, ts,
                                     wide, has_ignore, ignore, &ignored)
        elif typenum == CFP_NPY_FLOAT:
            correct = cfp_accuracy_f(ydata, ys, n, classes, rest, tdata, ts,
                                     wide, has_ignore, ignore, &ignored)
        else:
            correct = cfp_accuracy_d(ydata, ys, n, classes, rest, tdata, ts,
                                     wide, has_ignore, ignore, &ignored)
        # Only a signaling NaN's compare raises a flag; NumPy's argmax
        # acts on none.
        clear_flags(all_flags())
    dtype = y.dtype
    if has_ignore:
        total = _int64(size - ignored)
        if total == 0:
            return _asarray(0.0, dtype=dtype),
        return _asarray(float(correct) / total, dtype=dtype),
    # (pred == t).mean(dtype=y.dtype): NumPy's sum, a scalar of y's dtype,
    # divided by the count of items (an intp), cast back to y's dtype.
    ret = dtype.type(correct)
    return _asarray(ret.dtype.type(ret / _intp(size))),


ENTRIES = (
    compiled(accuracy.Accuracy, _forward,
             ('forward', 'forward_cpu', '_forward'), NULL, (),
             type_check=()),
)
