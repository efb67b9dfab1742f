"""NumPy arrays read from C through the mirrored layout of ``_ndarray.h``.

The mirror is checked against the running NumPy at import; while it does
not match, ``layout_ok()`` is False and every user takes its fallback.
"""
import numpy

# The canonical descrs of the builtin numeric dtypes, by address: an array
# whose descr is one of them has a dtype that ``isbuiltin`` calls 1.
cdef void *_canonical[32]
cdef int _n_canonical = 0
cdef bint _layout_ok = False


def _check_layout():
    """True when the mirrored ndarray layout matches this NumPy."""
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
    for code, num in (('i', CFP_NPY_INT), ('l', CFP_NPY_LONG),
                      ('q', CFP_NPY_LONGLONG)):
        ok = ok and numpy.dtype(code).num == num
    return ok


def _load():
    global _layout_ok, _n_canonical
    _layout_ok = _check_layout()
    # Kept alive by NumPy for the life of the process.
    for code in '?bBhHiIlLqQefdgFDG':
        dtype = numpy.dtype(code)
        if dtype.isbuiltin == 1 and _n_canonical < 32:
            _canonical[_n_canonical] = <void *>dtype
            _n_canonical += 1


_load()


cdef bint layout_ok():
    return _layout_ok


cdef int builtin_typenum(object a):
    """The type number of ``a``'s dtype when it is a builtin numeric dtype
    in native byte order (the dtypes ``isbuiltin`` calls 1), else -1.
    ``a`` must be a ``numpy.ndarray`` and ``layout_ok()`` True."""
    cdef void *descr = cfp_descr_of(a)
    cdef int i
    for i in range(_n_canonical):
        if _canonical[i] == descr:
            return cfp_typenum(a)
    dtype = a.dtype     # an equal dtype with a descr of its own
    if dtype.isbuiltin == 1:
        return dtype.num
    return -1
