"""NumPy arrays read from C through the mirrored layout of ``_ndarray.h``.

The mirror is checked against the running NumPy at import; where it does
not match, ``numpy_struct_matches()`` is False and every user takes its
fallback. (This is NumPy's C struct, not an array's memory layout, which
Chainer calls ``_layout``.)
"""
cimport cython
from cpython.object cimport PyObject_TypeCheck, PyTypeObject
from cpython.pycapsule cimport PyCapsule_GetPointer
from libc.stdint cimport uint32_t, uint64_t

import numpy
from weakref import ref as _weakref_ref

cdef extern from *:
    """
    /* PyArray_NewLikeArray(prototype, order, descr, subok) of NumPy's C-API
       table: what a ufunc allocates its output with. */
    typedef PyObject *(*cfp_new_like_t)(PyObject *, int, PyObject *, int);
    static cfp_new_like_t cfp_new_like_fn = NULL;
    static PyObject *cfp_new_like(PyObject *a) {
        return cfp_new_like_fn(a, 0 /* NPY_CORDER */, NULL, 0);
    }
    /* PyArray_NewFromDescr(&PyArray_Type, descr, nd, dims, NULL, NULL, 0,
       NULL), which steals a reference to descr. */
    typedef PyObject *(*cfp_new_from_descr_t)(
        PyTypeObject *, PyObject *, int, const Py_ssize_t *,
        const Py_ssize_t *, void *, int, PyObject *);
    static cfp_new_from_descr_t cfp_new_from_descr_fn = NULL;
    static PyObject *cfp_new_shaped(PyObject *array_type, PyObject *descr,
                                    int nd, const Py_ssize_t *dims) {
        Py_INCREF(descr);
        return cfp_new_from_descr_fn((PyTypeObject *)array_type, descr, nd,
                                     dims, NULL, NULL, 0, NULL);
    }
    /* PyArray_Zeros(nd, dims, descr, 0), numpy.zeros' function, which
       steals a reference to descr. */
    typedef PyObject *(*cfp_zeros_t)(int, const Py_ssize_t *, PyObject *,
                                     int);
    static cfp_zeros_t cfp_zeros_fn = NULL;
    static PyObject *cfp_zeros(PyObject *descr, int nd,
                               const Py_ssize_t *dims) {
        Py_INCREF(descr);
        return cfp_zeros_fn(nd, dims, descr, 0);
    }
    """
    ctypedef void *cfp_new_like_t
    ctypedef void *cfp_new_from_descr_t
    ctypedef void *cfp_zeros_t
    cfp_new_like_t cfp_new_like_fn
    cfp_new_from_descr_t cfp_new_from_descr_fn
    cfp_zeros_t cfp_zeros_fn
    object cfp_zeros(void *descr, int nd, const Py_ssize_t *dims)
    object cfp_new_like(object a)
    object cfp_new_shaped(object array_type, void *descr, int nd,
                          const Py_ssize_t *dims)

# The indexes of PyArray_NewLikeArray, PyArray_NewFromDescr and
# PyArray_Zeros in NumPy 1.x's C-API table, and the ABI version of the
# tables they hold for (numpy/__multiarray_api.h); NumPy never moves an
# entry within one ABI.
cdef int _NEW_LIKE_INDEX = 277
cdef int _NEW_FROM_DESCR_INDEX = 94
cdef int _ZEROS_INDEX = 183
cdef long _ABI_VERSION = 0x01000009

cdef type _ndarray = numpy.ndarray
# NumPy's type numbers from NPY_BOOL (0) to NPY_ULONGLONG: bool and the
# integers.
cdef int _NPY_ULONGLONG = numpy.dtype(numpy.ulonglong).num
cdef object _float32 = numpy.float32
cdef object _numpy_dtype = numpy.dtype
cdef object _float64 = numpy.float64
cdef object _numpy_empty = numpy.empty
cdef object _numpy_zeros = numpy.zeros

# The canonical descrs of the builtin numeric dtypes, by address: an array
# whose descr is one of them has a dtype that ``isbuiltin`` calls 1.
cdef void *_canonical[32]
cdef int _n_canonical = 0
cdef bint _struct_matches = False


def _check_struct():
    """True when the mirrored ndarray struct matches this NumPy."""
    ok = True
    for dt, num in ((numpy.float16, CFP_NPY_HALF),
                    (numpy.float32, CFP_NPY_FLOAT),
                    (numpy.float64, CFP_NPY_DOUBLE)):
        a = numpy.zeros((3, 5), dtype=dt)
        ok = ok and (<size_t>cfp_data(a) == <size_t>a.ctypes.data
                     and cfp_nd(a) == 2 and cfp_dims(a)[0] == 3
                     and cfp_dims(a)[1] == 5 and cfp_typenum(a) == num
                     and a.dtype.num == num
                     and cfp_descr_of(a) == <void *>a.dtype
                     and cfp_elsize(a) == a.itemsize
                     and cfp_strides(a)[0] == a.strides[0]
                     and cfp_strides(a)[1] == a.strides[1]
                     and (cfp_flags(a) & CFP_NPY_C_CONTIGUOUS) != 0
                     and (cfp_flags(a) & CFP_NPY_WRITEABLE) != 0)
        b = a[:, ::2]
        ok = ok and (cfp_flags(b) & CFP_NPY_C_CONTIGUOUS) == 0
        a.flags.writeable = False
        ok = ok and (cfp_flags(a) & CFP_NPY_WRITEABLE) == 0
    # The loops read int as 4 bytes and long and long long as 8 (LP64, as
    # on Linux); elsewhere (a 4-byte long on Windows) they all fall back.
    for code, num, size in (('i', CFP_NPY_INT, 4), ('l', CFP_NPY_LONG, 8),
                            ('q', CFP_NPY_LONGLONG, 8)):
        ok = (ok and numpy.dtype(code).num == num
              and numpy.dtype(code).itemsize == size)
    return ok and (
        cfp_descr_flags(numpy.dtype(object)) & CFP_NPY_NEEDS_FILL != 0
        and cfp_descr_flags(numpy.dtype(numpy.float32)) == 0)


cdef void *api_entry(int index) except? NULL:
    """Entry ``index`` of NumPy's C-API table (the numbering of
    numpy/__multiarray_api.h), or NULL where this NumPy's ABI is not the
    one the indexes hold for."""
    from numpy.core import _multiarray_umath as m
    get_version = getattr(m, '_get_ndarray_c_version', None)
    capsule = getattr(m, '_ARRAY_API', None)
    if (get_version is None or get_version() != _ABI_VERSION
            or type(capsule).__name__ != 'PyCapsule'):
        return NULL
    return (<void **>PyCapsule_GetPointer(capsule, NULL))[index]


def _load_new_like():
    """Takes PyArray_NewLikeArray, PyArray_NewFromDescr and PyArray_Zeros
    from NumPy's C-API table where this NumPy's ABI is the one the indexes
    hold for, and checks them on probes; ``new_like`` and ``new_shaped``
    are unavailable otherwise, and ``empty`` and ``zeros`` call NumPy's
    functions."""
    global cfp_new_like_fn, cfp_new_from_descr_fn, cfp_zeros_fn
    if api_entry(_NEW_LIKE_INDEX) is NULL:
        return
    cfp_new_like_fn = <cfp_new_like_t>api_entry(_NEW_LIKE_INDEX)
    probe = numpy.zeros((3, 5), numpy.float32)[:, ::2]
    out = cfp_new_like(probe)
    if not (type(out) is _ndarray and out.shape == (3, 3)
            and out.dtype is probe.dtype and out.flags.c_contiguous
            and out.flags.owndata and out.flags.writeable):
        cfp_new_like_fn = NULL
    cfp_new_from_descr_fn = (
        <cfp_new_from_descr_t>api_entry(_NEW_FROM_DESCR_INDEX))
    cdef Py_ssize_t dims[2]
    dims[0] = 2
    dims[1] = 1
    out = cfp_new_shaped(_ndarray, cfp_descr_of(probe), 2, dims)
    zero_d = cfp_new_shaped(_ndarray, cfp_descr_of(probe), 0, dims)
    if not (type(out) is _ndarray and out.shape == (2, 1)
            and out.dtype is probe.dtype and out.flags.c_contiguous
            and out.flags.owndata and out.flags.writeable
            and type(zero_d) is _ndarray and zero_d.shape == ()
            and zero_d.dtype is probe.dtype):
        cfp_new_from_descr_fn = NULL
    cfp_zeros_fn = <cfp_zeros_t>api_entry(_ZEROS_INDEX)
    dims[0] = 3
    dims[1] = 70    # more than NumPy's cache of small buffers holds
    out = cfp_zeros(cfp_descr_of(probe), 2, dims)
    if not (type(out) is _ndarray and out.shape == (3, 70)
            and out.dtype is probe.dtype and out.flags.c_contiguous
            and out.flags.owndata and out.flags.writeable
            and not out.any()):
        cfp_zeros_fn = NULL


def _load():
    global _struct_matches, _n_canonical
    _struct_matches = _check_struct()
    if _struct_matches:
        _load_new_like()
    # Kept alive by NumPy for the life of the process. Searched in this
    # order: float32 and float64 first, the dtypes nearly every array has.
    for code in 'fd?bBhHiIlLqQegFDG':
        dtype = numpy.dtype(code)
        if dtype.isbuiltin == 1 and _n_canonical < 32:
            _canonical[_n_canonical] = <void *>dtype
            _n_canonical += 1


_load()


cdef bint numpy_struct_matches():
    """Whether our mirror of NumPy's array struct (``_ndarray.h``) matches
    the running NumPy: the ``cfp_*`` readers and new arrays need it."""
    return _struct_matches


cdef int builtin_typenum(object a):
    """The type number of ``a``'s dtype when it is a builtin numeric dtype
    in native byte order (the dtypes ``isbuiltin`` calls 1, or a plain one
    equal to such a dtype), else -1.
    ``a`` must be a ``numpy.ndarray`` and ``numpy_struct_matches()`` True."""
    cdef void *descr = cfp_descr_of(a)
    cdef int i
    for i in range(_n_canonical):
        if _canonical[i] == descr:
            return cfp_typenum(a)
    dtype = a.dtype     # an equal dtype with a descr of its own
    if dtype.isbuiltin == 1:
        return dtype.num
    # Unpickling makes one that NumPy calls not builtin (isbuiltin 0), and
    # NumPy's results computed from it keep it: plain, native and equal to
    # the builtin dtype of its type number, every loop takes it as that.
    if (dtype.isbuiltin == 0 and dtype.fields is None
            and dtype.subdtype is None and dtype.metadata is None
            and dtype.isnative and dtype == _numpy_dtype(dtype.char)):
        return dtype.num
    return -1


cdef object new_like(object a):
    """A new uninitialized C-ordered array of the shape and dtype of the
    ndarray ``a``, as a ufunc allocates its output; None where NumPy's
    function for it is unavailable."""
    if cfp_new_like_fn is NULL:
        return None
    return cfp_new_like(a)


cdef object new_shaped(object a, int nd, const Py_ssize_t *dims):
    """A new uninitialized C-ordered ndarray of ``a``'s dtype and the
    shape ``dims[:nd]``; None where NumPy's function for it is
    unavailable."""
    if cfp_new_from_descr_fn is NULL:
        return None
    return cfp_new_shaped(_ndarray, cfp_descr_of(a), nd, dims)


cdef object empty(object dtype, int nd, const Py_ssize_t *dims):
    """``numpy.empty(dims[:nd], dtype)``: a new uninitialized C-ordered
    ndarray whose dtype is the ``numpy.dtype`` instance ``dtype`` itself,
    as NumPy's function gives it, without its argument parsing."""
    if (cfp_new_from_descr_fn is NULL
            or not PyObject_TypeCheck(dtype, <PyTypeObject *>_numpy_dtype)
            or cfp_descr_flags(dtype) & CFP_NPY_NEEDS_FILL):
        return _numpy_empty(tuple([dims[k] for k in range(nd)]), dtype)
    return cfp_new_shaped(_ndarray, <void *>dtype, nd, dims)


cdef object empty1(object dtype, Py_ssize_t n):
    """``numpy.empty(n, dtype)``, as ``empty``."""
    return empty(dtype, 1, &n)


cdef object empty2(object dtype, Py_ssize_t rows, Py_ssize_t cols):
    """``numpy.empty((rows, cols), dtype)``, as ``empty``."""
    cdef Py_ssize_t dims[2]
    dims[0] = rows
    dims[1] = cols
    return empty(dtype, 2, dims)


cdef object zeros(object dtype, int nd, const Py_ssize_t *dims):
    """``numpy.zeros(dims[:nd], dtype)`` by NumPy's function for it, for a
    ``numpy.dtype`` instance ``dtype``, without its argument parsing."""
    if (cfp_zeros_fn is NULL
            or not PyObject_TypeCheck(dtype, <PyTypeObject *>_numpy_dtype)):
        return _numpy_zeros(tuple([dims[k] for k in range(nd)]), dtype)
    return cfp_zeros(<void *>dtype, nd, dims)


cdef object zeros_shaped(object dtype, object shape):
    """``numpy.zeros(shape, dtype)``, as ``zeros`` where ``shape`` is a
    tuple of ints (NumPy's own call otherwise)."""
    cdef Py_ssize_t dims[32]
    cdef int nd = dims_of(shape, dims)
    if nd < 0:
        return _numpy_zeros(shape, dtype)
    return zeros(dtype, nd, dims)


cdef int dims_of(object shape, Py_ssize_t *dims) except -2:
    """The ints of the tuple ``shape`` written to ``dims`` (room for 32),
    and their number; -1 where ``shape`` is not a tuple of at most 32
    ints that each fit a ``Py_ssize_t`` (NumPy's call then judges it)."""
    if type(shape) is not tuple or len(<tuple>shape) > 32:
        return -1
    cdef Py_ssize_t k
    for k in range(len(<tuple>shape)):
        item = (<tuple>shape)[k]
        if type(item) is not int:
            return -1
        try:
            dims[k] = item
        except OverflowError:
            return -1
    return <int>len(<tuple>shape)


def empty_for_tests(object dtype, tuple shape, bint zeroed=False):
    """``empty`` (``zeros`` where ``zeroed``) of ``shape``, for the
    tests."""
    cdef Py_ssize_t dims[32]
    cdef int nd = dims_of(shape, dims)
    assert nd >= 0
    if zeroed:
        return zeros(dtype, nd, dims)
    return empty(dtype, nd, dims)


cdef bint canonical(object a):
    """Whether the ndarray ``a``'s descr is the canonical one of its
    builtin dtype (``numpy_struct_matches()`` must be True)."""
    cdef void *descr = cfp_descr_of(a)
    cdef int i
    for i in range(_n_canonical):
        if _canonical[i] == descr:
            return True
    return False


cdef bint aligned_array(object a, int typenum, int nd):
    """Whether ``a`` is an aligned ``numpy.ndarray`` of ``nd`` dimensions
    and builtin type ``typenum`` in native byte order
    (``numpy_struct_matches()`` must be True)."""
    return (type(a) is _ndarray and builtin_typenum(a) == typenum
            and cfp_nd(a) == nd and cfp_flags(a) & CFP_NPY_ALIGNED)


# The array made_adding_zeros_exactly() was last told of since
# forget_made_exact(), weakly: the record never keeps an array alive.
cdef object _made_exact = None


cdef int made_adding_zeros_exactly(object acc) except -1:
    """Records that ``acc``, just made, holds zeros and IEEE sums onto them
    that are not NaN: no -0.0 (``0.0 + y`` is +0.0 where ``y`` is -0.0; a
    sum is -0.0 only where both terms are) and no signaling NaN, so that
    ``adds_zeros_exactly(acc)`` holds without reading it."""
    global _made_exact
    _made_exact = _weakref_ref(acc)
    return 0


cdef void forget_made_exact() noexcept:
    """Drops that record: the array may have reached code that writes into
    it since."""
    global _made_exact
    _made_exact = None


cdef bint made_exact_recorded() noexcept:
    """Whether made_adding_zeros_exactly() recorded an array since
    forget_made_exact(): the cheap test before made_exact()."""
    return _made_exact is not None


cdef bint made_exact(object acc):
    """Whether ``acc`` is the array made_adding_zeros_exactly() was last
    told of, since forget_made_exact()."""
    return _made_exact is not None and _made_exact() is acc


cdef bint adds_zeros_exactly(object acc) except -1:
    """Whether ``acc + 0`` is ``acc``, bit for bit and raising no
    floating-point exception: a C-contiguous float32 or float64 array with
    no -0.0 (which + 0.0 makes +0.0) and no signaling NaN (which it makes
    quiet, raising invalid). Its items are read as C integers, so a
    misaligned ``acc`` is not taken."""
    if (type(acc) is not _ndarray or not _struct_matches
            or (cfp_flags(acc) & (CFP_NPY_C_CONTIGUOUS | CFP_NPY_ALIGNED)
                != (CFP_NPY_C_CONTIGUOUS | CFP_NPY_ALIGNED))):
        return False
    cdef int typenum = builtin_typenum(acc)
    cdef Py_ssize_t n = 1
    cdef int k
    for k in range(cfp_nd(acc)):
        n *= cfp_dims(acc)[k]
    if typenum == CFP_NPY_FLOAT:
        return not _has_bits[uint32_t](
            <const uint32_t *>cfp_data(acc), n, 0x80000000u, 0x7f800000u,
            0x00400000u)
    if typenum == CFP_NPY_DOUBLE:
        return not _has_bits[uint64_t](
            <const uint64_t *>cfp_data(acc), n, 0x8000000000000000u,
            0x7ff0000000000000u, 0x0008000000000000u)
    return False


ctypedef fused _bits_t:
    uint32_t
    uint64_t


@cython.boundscheck(False)
@cython.wraparound(False)
cdef bint _has_bits(const _bits_t *a, Py_ssize_t n, _bits_t neg_zero,
                    _bits_t exponent, _bits_t quiet) noexcept nogil:
    # Any -0.0, or any NaN (all exponent bits, some mantissa bit) whose
    # quiet bit is clear.
    cdef Py_ssize_t i
    cdef _bits_t v, mantissa = exponent ^ (neg_zero - 1)
    cdef bint found = False
    for i in range(n):
        v = a[i]
        found |= (v == neg_zero) | (((v & exponent) == exponent)
                                    & ((v & mantissa) != 0)
                                    & ((v & quiet) == 0))
    return found


cdef bint sums_in_place_exactly(object a, object b) except -1:
    """Whether ``numpy.add(a, b, out=a)`` leaves ``a`` with the bits of
    ``numpy.add(a, b)``: two C-contiguous, aligned float32, float64 or integer
    arrays (the new sum is C-ordered too), and where they hold one element,
    no NaN: NumPy's in-place loop on a single element keeps the second
    operand's NaN where every other loop keeps the first's (measured on
    NumPy 1.26, sizes 1 to 100,003)."""
    if not (_plain_numeric(a) and _plain_numeric(b)):
        return False
    if size_of(a) != 1:
        return True
    return _nan_free(a) and _nan_free(b)


cdef Py_ssize_t size_of(object a) except -1:
    """``a.size`` of the ndarray ``a``."""
    cdef Py_ssize_t size = 1
    cdef int k
    if not _struct_matches:
        return a.size
    for k in range(cfp_nd(a)):
        size *= cfp_dims(a)[k]
    return size


cdef bint _plain_numeric(object a) except -1:
    if type(a) is not _ndarray:
        return False
    cdef int num = builtin_typenum(a) if _struct_matches else -1
    if num >= 0:
        # Bool, the integers, float32, float64 (kinds 'b', 'i', 'u', 'f');
        # aligned, as _nan_free reads the items as C integers.
        return (cfp_c_aligned(a)
                and (num <= _NPY_ULONGLONG or num == CFP_NPY_FLOAT
                     or num == CFP_NPY_DOUBLE))
    return (a.flags.c_contiguous and a.flags.aligned
            and (a.dtype == _float32 or a.dtype == _float64
                 or a.dtype.kind in 'iub'))


cdef bint _nan_free(object a) except -1:
    if a.dtype == _float32:
        return not _has_nan[uint32_t](a.reshape(-1).view(numpy.uint32),
                                      0x7f800000u, 0x007fffffu)
    if a.dtype == _float64:
        return not _has_nan[uint64_t](
            a.reshape(-1).view(numpy.uint64), 0x7ff0000000000000u,
            0x000fffffffffffffu)
    return True


@cython.boundscheck(False)
@cython.wraparound(False)
cdef bint _has_nan(const _bits_t[::1] a, _bits_t exponent,
                   _bits_t mantissa) noexcept nogil:
    cdef Py_ssize_t i
    cdef bint found = False
    for i in range(a.shape[0]):
        found |= (((a[i] & exponent) == exponent)
                  & ((a[i] & mantissa) != 0))
    return found


cdef bint dense_transposed(object a):
    """Whether the ndarray ``a``'s items fill its memory in some order of
    its axes, strides positive, and no axis is of length 1: a transpose of
    a C-contiguous array. A ufunc's output given ``a`` (and operands of
    its layout) has that order: ``empty_like(a)``'s strides. (Of an axis
    of length 1, NumPy's outputs choose the stride by their own rules.)"""
    cdef int nd = cfp_nd(a), _k, j, best
    cdef Py_ssize_t *dims = cfp_dims(a)
    cdef Py_ssize_t *strides = cfp_strides(a)
    cdef Py_ssize_t expected = cfp_elsize(a)
    cdef unsigned long long used = 0
    if nd > 64:
        return False
    for _k in range(nd):
        # The axis of the smallest stride not yet used must step over
        # what the axes before it cover.
        best = -1
        for j in range(nd):
            if not (used >> j) & 1 and (
                    best < 0 or strides[j] < strides[best]):
                best = j
        if dims[best] == 1 or strides[best] != expected:
            return False
        used |= 1ULL << best
        expected *= dims[best]
    return True
