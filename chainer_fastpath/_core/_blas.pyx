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
    CFP_NPY_C_CONTIGUOUS, CFP_NPY_DOUBLE, CFP_NPY_F_CONTIGUOUS, CFP_NPY_FLOAT,
    canonical, cfp_data, cfp_descr_of, cfp_dims, cfp_flags, cfp_nd,
    cfp_strides, cfp_typenum, new_shaped, numpy_struct_matches)

# CBLAS's enums, as every CBLAS header numbers them.
cdef enum:
    _ROW_MAJOR = 101
    _COL_MAJOR = 102
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

ctypedef void (*_sgemm_t)(int order, int trans_a, int trans_b, int64_t m,
                          int64_t n, int64_t k, float alpha, const float *a,
                          int64_t lda, const float *b, int64_t ldb,
                          float beta, float *c, int64_t ldc) noexcept nogil
ctypedef void (*_dgemm_t)(int order, int trans_a, int trans_b, int64_t m,
                          int64_t n, int64_t k, double alpha,
                          const double *a, int64_t lda, const double *b,
                          int64_t ldb, double beta, double *c,
                          int64_t ldc) noexcept nogil

cdef _sgemv_t _sgemv = NULL
cdef _dgemv_t _dgemv = NULL
cdef _sgemm_t _sgemm = NULL
cdef _dgemm_t _dgemm = NULL
cdef type _ndarray = numpy.ndarray


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
    global _sgemv, _dgemv, _sgemm, _dgemm
    lib = _numpy_openblas()
    if lib is None:
        return False
    try:
        found = [ctypes.cast(getattr(lib, name), ctypes.c_void_p).value
                 for name in ('cblas_sgemv64_', 'cblas_dgemv64_',
                              'cblas_sgemm64_', 'cblas_dgemm64_')]
    except AttributeError:
        return False
    _sgemv = <_sgemv_t><uintptr_t>found[0]
    _dgemv = <_dgemv_t><uintptr_t>found[1]
    _sgemm = <_sgemm_t><uintptr_t>found[2]
    _dgemm = <_dgemm_t><uintptr_t>found[3]
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
    # NumPy zeroes its output before the call, which beta 0 then scales.
    memset(out, 0, (n if trans else m) * itemsize)
    _gemv_call(typenum, _ROW_MAJOR, _TRANS if trans else _NO_TRANS, m, n, a,
               n, v, v_stride // itemsize, out)
    return True


# cblas_matrixproduct's names for the shape of a 2-d operand.
cdef enum _Shape:
    _SCALAR, _COLUMN, _ROW, _MATRIX


cdef struct _Matrix:
    # A 2-d operand as the product reads it: an array's struct, or its
    # transpose's without making the view.
    char *data
    Py_ssize_t dims[2]
    Py_ssize_t strides[2]
    int flags


cdef _Matrix _matrix(object a, bint transposed) noexcept:
    cdef _Matrix m
    cdef int k = 1 if transposed else 0
    m.data = cfp_data(a)
    m.dims[0] = cfp_dims(a)[k]
    m.dims[1] = cfp_dims(a)[1 - k]
    m.strides[0] = cfp_strides(a)[k]
    m.strides[1] = cfp_strides(a)[1 - k]
    m.flags = cfp_flags(a)
    if transposed:
        # A transpose is C-contiguous where the array is F-contiguous.
        m.flags &= ~(CFP_NPY_C_CONTIGUOUS | CFP_NPY_F_CONTIGUOUS)
        if cfp_flags(a) & CFP_NPY_C_CONTIGUOUS:
            m.flags |= CFP_NPY_F_CONTIGUOUS
        if cfp_flags(a) & CFP_NPY_F_CONTIGUOUS:
            m.flags |= CFP_NPY_C_CONTIGUOUS
    return m


cdef _Shape _shape_of(const _Matrix *a) noexcept:
    if a.dims[0] > 1:
        return _COLUMN if a.dims[1] == 1 else _MATRIX
    return _SCALAR if a.dims[1] == 1 else _ROW


cdef bint _blas_strides(const _Matrix *a, Py_ssize_t itemsize) noexcept:
    # NumPy's _bad_strides, negated: items aligned, strides non-negative
    # multiples of the item size, 0 only along an axis of length 1.
    cdef int k
    if <uintptr_t>a.data % itemsize:
        return False
    for k in range(2):
        if (a.strides[k] < 0 or a.strides[k] % itemsize
                or a.strides[k] == 0 and a.dims[k] > 1):
            return False
    return True


cdef inline int64_t _at_least_1(Py_ssize_t n) noexcept nogil:
    return n if n > 1 else 1


cdef object matrix_product(object a, object b):
    """``numpy.dot(a, b)`` of two matrices (2-d exact ndarrays, one
    canonical float32 or float64 descr, aligned), by the BLAS call NumPy's
    ``cblas_matrixproduct`` makes: gemv where one operand is a matrix and
    the other a row or column, gemm where both are matrices (or a column
    times a row). None, nothing done, where NumPy would first copy an
    operand, take another route (a scalar operand, a dot of two vectors,
    ``syrk`` for a matrix times its own transpose, an empty product) or
    raise (mismatched shapes), or where the routines are not loaded."""
    return _product(a, False, b, False)


cdef object matrix_product_t(object a, bint a_transposed, object b,
                             bint b_transposed):
    """``matrix_product`` of ``a.T`` (where ``a_transposed``) or ``a`` and
    of ``b.T`` or ``b``, without making the views."""
    return _product(a, a_transposed, b, b_transposed)


cdef object _product(object a, bint a_transposed, object b,
                     bint b_transposed):
    if _sgemm is NULL or not numpy_struct_matches():
        return None
    if (type(a) is not _ndarray or type(b) is not _ndarray
            or cfp_nd(a) != 2 or cfp_nd(b) != 2
            or cfp_descr_of(a) != cfp_descr_of(b) or not canonical(a)):
        return None
    cdef int typenum = cfp_typenum(a)
    if typenum != CFP_NPY_FLOAT and typenum != CFP_NPY_DOUBLE:
        return None
    cdef Py_ssize_t itemsize = 4 if typenum == CFP_NPY_FLOAT else 8
    cdef _Matrix ma = _matrix(a, a_transposed)
    cdef _Matrix mb = _matrix(b, b_transposed)
    cdef Py_ssize_t *da = ma.dims
    cdef Py_ssize_t *db = mb.dims
    if (da[1] != db[0] or da[1] == 0 or da[0] == 0 or db[1] == 0
            or not _blas_strides(&ma, itemsize)
            or not _blas_strides(&mb, itemsize)):
        return None
    cdef _Shape sa = _shape_of(&ma), sb = _shape_of(&mb)
    if sa == _SCALAR or sb == _SCALAR or (sb == _COLUMN and sa != _MATRIX):
        return None
    cdef int fa = ma.flags, fb = mb.flags
    cdef bint ca = fa & CFP_NPY_C_CONTIGUOUS, cb = fb & CFP_NPY_C_CONTIGUOUS
    cdef bint ea = fa & CFP_NPY_F_CONTIGUOUS, eb = fb & CFP_NPY_F_CONTIGUOUS
    if not (ca or ea) or not (cb or eb):
        return None     # NumPy would copy it first
    cdef int trans_a = _NO_TRANS, trans_b = _NO_TRANS
    cdef int64_t lda = 0, ldb = 0
    if sa != _MATRIX and sb == _MATRIX or sa == _MATRIX and sb != _MATRIX:
        pass
    else:
        lda = _at_least_1(da[1])
        ldb = _at_least_1(db[1])
        if ea:
            trans_a = _TRANS
            lda = _at_least_1(da[0])
        if eb:
            trans_b = _TRANS
            ldb = _at_least_1(db[0])
        if (ma.data == mb.data and da[0] == db[1] and da[1] == db[0]
                and ma.strides[0] == mb.strides[1]
                and ma.strides[1] == mb.strides[0]
                and (trans_a == _TRANS) != (trans_b == _TRANS)):
            return None     # NumPy's syrk
    cdef Py_ssize_t dims[2]
    dims[0] = da[0]
    dims[1] = db[1]
    out = new_shaped(a, 2, dims)
    if out is None:
        return None
    cdef char *o = cfp_data(out)
    # NumPy zeroes its output before the call, which beta 0 then scales.
    # gemm with beta 0 sets every item itself, whatever was there (C "need
    # not be set on input", as the BLAS reference puts it; OpenBLAS zeroes
    # it first): only gemv's output, which OpenBLAS scales, is zeroed.
    if (sa == _MATRIX) != (sb == _MATRIX):
        memset(o, 0, dims[0] * dims[1] * itemsize)
    if sa == _MATRIX and sb != _MATRIX:
        # A matrix times a column: gemv of a.
        _gemv_at(typenum, _ROW_MAJOR if ca else _COL_MAJOR, _NO_TRANS, &ma,
                 _at_least_1(da[1] if ca else da[0]), mb.data,
                 mb.strides[0] // itemsize, o)
    elif sa != _MATRIX and sb == _MATRIX:
        # A row or column times a matrix: gemv of b transposed.
        _gemv_at(typenum, _ROW_MAJOR if cb else _COL_MAJOR, _TRANS, &mb,
                 _at_least_1(db[1] if cb else db[0]), ma.data,
                 ma.strides[1 if sa == _ROW else 0] // itemsize, o)
    else:
        _gemm_at(typenum, trans_a, trans_b, &ma, lda, &mb, ldb, o,
                 _at_least_1(dims[1]))
    return out


# NumPy lets other threads run during its BLAS calls; for a product this
# small the hand-over costs more than the product, and no thread waits long.
cdef Py_ssize_t _KEEP_THE_LOCK = 1 << 16


cdef void _gemm_call(int typenum, int trans_a, int trans_b, int64_t m,
                     int64_t n, int64_t k, const char *a, int64_t lda,
                     const char *b, int64_t ldb, char *out,
                     int64_t ldc) noexcept nogil:
    # NumPy's gemm helper: row major, alpha 1, beta 0 into out.
    if typenum == CFP_NPY_FLOAT:
        _sgemm(_ROW_MAJOR, trans_a, trans_b, m, n, k, 1.0, <const float *>a,
               lda, <const float *>b, ldb, 0.0, <float *>out, ldc)
    else:
        _dgemm(_ROW_MAJOR, trans_a, trans_b, m, n, k, 1.0,
               <const double *>a, lda, <const double *>b, ldb, 0.0,
               <double *>out, ldc)


cdef void _gemm_at(int typenum, int trans_a, int trans_b, const _Matrix *a,
                   int64_t lda, const _Matrix *b, int64_t ldb, char *out,
                   int64_t ldc) noexcept:
    cdef int64_t m = a.dims[0], n = b.dims[1], k = b.dims[0]
    cdef const char *pa = a.data
    cdef const char *pb = b.data
    if m * n * k >= _KEEP_THE_LOCK:
        with nogil:
            _gemm_call(typenum, trans_a, trans_b, m, n, k, pa, lda, pb, ldb,
                       out, ldc)
    else:
        _gemm_call(typenum, trans_a, trans_b, m, n, k, pa, lda, pb, ldb, out,
                   ldc)


cdef void _gemv_call(int typenum, int order, int trans, int64_t rows,
                     int64_t cols, const char *m, int64_t lda, const char *v,
                     int64_t inc, char *out) noexcept nogil:
    # NumPy's gemv helper: the matrix's own dims, alpha 1, beta 0 into out.
    if typenum == CFP_NPY_FLOAT:
        _sgemv(order, trans, rows, cols, 1.0, <const float *>m, lda,
               <const float *>v, inc, 0.0, <float *>out, 1)
    else:
        _dgemv(order, trans, rows, cols, 1.0, <const double *>m, lda,
               <const double *>v, inc, 0.0, <double *>out, 1)


cdef void _gemv_at(int typenum, int order, int trans, const _Matrix *m,
                   int64_t lda, const char *v, int64_t inc,
                   char *out) noexcept:
    cdef int64_t rows = m.dims[0], cols = m.dims[1]
    cdef const char *pm = m.data
    if rows * cols >= _KEEP_THE_LOCK:
        with nogil:
            _gemv_call(typenum, order, trans, rows, cols, pm, lda, v, inc,
                       out)
    else:
        _gemv_call(typenum, order, trans, rows, cols, pm, lda, v, inc, out)

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
            b = rng.standard_normal((n, 5)).astype(dtype)
            for left, right in ((a, b), (a, b.T.copy().T), (a[:1], b),
                                (a, numpy.ascontiguousarray(v)[:, None])):
                out = matrix_product(left, right)
                if (out is None or out.tobytes()
                        != numpy.dot(left, right).tobytes()):
                    return False
                for out in (matrix_product_t(left, False, right.T, True),
                            matrix_product_t(left.T, True, right, False)):
                    if (out is None or out.tobytes()
                            != numpy.dot(left, right).tobytes()):
                        return False
    return True


def gemv_ready():
    """Whether ``gemv`` and ``matrix_product`` take their cases (else
    callers use ``numpy.dot``)."""
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


def product_of_matrices(a, b, bint a_transposed=False,
                        bint b_transposed=False):
    """Test hook: ``matrix_product(a, b)``, or ``matrix_product_t`` where
    an operand is given to be transposed."""
    if a_transposed or b_transposed:
        return matrix_product_t(a, a_transposed, b, b_transposed)
    return matrix_product(a, b)


if _load() and not _agrees():
    _sgemv = NULL
    _dgemv = NULL
    _sgemm = NULL
    _dgemm = NULL
