"""``numpy.dot`` of a matrix and a vector, as the BLAS call NumPy makes.

For float32 and float64 operands of at most two dimensions NumPy's dot
converts its arguments, picks a shape case and calls its BLAS
(``cblas_matrixproduct``); for a small matrix the conversions cost more than
the product. The losses that take one dot per sample (hierarchical softmax,
negative sampling) call the same BLAS routine, ``?gemv``, with the
arguments NumPy would pass, on the cases where NumPy calls it straight away:
a C-contiguous matrix of at least two rows and two columns, a vector of
positive stride, an output that is a C-contiguous array of its own. Same
library, same routine, same arguments: the same bits.

The routine comes from the OpenBLAS that NumPy's wheels bundle (ILP64, its
symbols ending in ``64_``), found beside NumPy's package and checked at
import against ``numpy.dot`` itself. Where NumPy is built otherwise, or the
check fails, ``gemv_ready()`` is False and callers keep to ``numpy.dot``.
"""
import ctypes
import glob
import os

import numpy

from libc.stdint cimport int64_t, uintptr_t
from libc.string cimport memset

from chainer_fastpath._core._ndarray cimport (
    CFP_NPY_DOUBLE, CFP_NPY_FLOAT, cfp_data, cfp_strides)

# CBLAS's enums, as every CBLAS header numbers them.
cdef enum:
    _ROW_MAJOR = 101
    _NO_TRANS = 111
    _TRANS = 112

ctypedef void (*_sgemv_t)(int order, int trans, int64_t m, int64_t n,
                          float alpha, const float *a, int64_t lda,
                          const float *x, int64_t incx, float beta, float *y,
                          int64_t incy) noexcept nogil
ctypedef void (*_dgemv_t)(int order, int trans, int64_t m, int64_t n,
                          double alpha, const double *a, int64_t lda,
                          const double *x, int64_t incx, double beta,
                          double *y, int64_t incy) noexcept nogil

cdef _sgemv_t _sgemv = NULL
cdef _dgemv_t _dgemv = NULL


def _numpy_openblas():
    """NumPy's bundled OpenBLAS (already loaded by NumPy), or None."""
    try:
        config = numpy.show_config(mode='dicts')
    except TypeError:   # NumPy before 1.26 prints its configuration only
        return None
    blas = config.get('Build Dependencies', {}).get('blas', {})
    if blas.get('name') != 'openblas64':
        return None
    libs = os.path.join(os.path.dirname(os.path.dirname(numpy.__file__)),
                        'numpy.libs')
    found = glob.glob(os.path.join(libs, 'libopenblas64_*.so*'))
    if len(found) != 1:
        return None
    try:
        return ctypes.CDLL(found[0], mode=os.RTLD_NOLOAD | os.RTLD_LAZY)
    except (OSError, AttributeError):
        return None


cdef bint _load() except -1:
    global _sgemv, _dgemv
    lib = _numpy_openblas()
    if lib is None:
        return False
    try:
        s = ctypes.cast(lib.cblas_sgemv64_, ctypes.c_void_p).value
        d = ctypes.cast(lib.cblas_dgemv64_, ctypes.c_void_p).value
    except AttributeError:
        return False
    _sgemv = <_sgemv_t><uintptr_t>s
    _dgemv = <_dgemv_t><uintptr_t>d
    return True


cdef bint gemv(int typenum, bint trans, const char *a, Py_ssize_t m,
               Py_ssize_t n, const char *v, Py_ssize_t v_stride,
               char *out) noexcept nogil:
    """``numpy.dot(A, v, out)`` (``trans`` False) or ``numpy.dot(v, A,
    out)`` (True) for the C-contiguous, aligned (m, n) float32 or float64
    matrix A at ``a``, the vector at ``v`` (items aligned, ``v_stride``
    bytes apart) and a C-contiguous ``out`` that shares no memory with
    them, by the gemv call NumPy makes. False, nothing done, where NumPy
    would not make it straight away (a dimension below 2, a stride that is
    not a positive multiple of the item size) or the routine is not
    loaded."""
    cdef Py_ssize_t itemsize = 4 if typenum == CFP_NPY_FLOAT else 8
    if (_sgemv is NULL or m < 2 or n < 2 or v_stride <= 0
            or v_stride % itemsize
            or (typenum != CFP_NPY_FLOAT and typenum != CFP_NPY_DOUBLE)):
        return False
    cdef int op = _TRANS if trans else _NO_TRANS
    # NumPy zeroes its output before the call, which beta 0 then scales.
    memset(out, 0, (n if trans else m) * itemsize)
    if typenum == CFP_NPY_FLOAT:
        _sgemv(_ROW_MAJOR, op, m, n, 1.0, <const float *>a, n,
               <const float *>v, v_stride // itemsize, 0.0, <float *>out, 1)
    else:
        _dgemv(_ROW_MAJOR, op, m, n, 1.0, <const double *>a, n,
               <const double *>v, v_stride // itemsize, 0.0, <double *>out,
               1)
    return True


cdef bint _agrees() except -1:
    # A few products of each dtype, both ways, against numpy.dot: a
    # library other than the one NumPy calls would differ in some bits.
    rng = numpy.random.RandomState(0)
    for dtype in (numpy.float32, numpy.float64):
        typenum = numpy.dtype(dtype).num
        for m, n in ((2, 3), (7, 33), (40, 9)):
            a = rng.standard_normal((m, n)).astype(dtype)
            v = rng.standard_normal(2 * n).astype(dtype)[::2]
            w = rng.standard_normal(m).astype(dtype)
            out = numpy.empty(m, dtype)
            if (not gemv(typenum, False, cfp_data(a), m, n, cfp_data(v),
                         cfp_strides(v)[0], cfp_data(out))
                    or out.tobytes() != numpy.dot(a, v).tobytes()):
                return False
            out = numpy.empty(n, dtype)
            if (not gemv(typenum, True, cfp_data(a), m, n, cfp_data(w),
                         cfp_strides(w)[0], cfp_data(out))
                    or out.tobytes() != numpy.dot(w, a).tobytes()):
                return False
    return True


def gemv_ready():
    """Whether ``gemv`` takes its cases (else callers use ``numpy.dot``)."""
    return _sgemv is not NULL


def product(a, v, bint trans):
    """Test hook: ``numpy.dot(a, v)`` (``numpy.dot(v, a)`` where ``trans``)
    by ``gemv`` for a C-contiguous matrix ``a`` and a 1-d ``v`` of its
    dtype, or None where ``gemv`` declines. The output starts as NaNs,
    which the result must not show."""
    if not (isinstance(a, numpy.ndarray) and isinstance(v, numpy.ndarray)
            and a.ndim == 2 and v.ndim == 1 and a.flags.c_contiguous
            and a.flags.aligned and v.flags.aligned and a.dtype == v.dtype
            and v.shape[0] == a.shape[1 - trans]):
        raise ValueError('a C-contiguous matrix and a vector of its dtype')
    out = numpy.full(a.shape[trans], numpy.nan, a.dtype)
    if not gemv(a.dtype.num, trans, cfp_data(a), a.shape[0], a.shape[1],
                cfp_data(v), cfp_strides(v)[0], cfp_data(out)):
        return None
    return out


if _load() and not _agrees():
    _sgemv = NULL
    _dgemv = NULL
