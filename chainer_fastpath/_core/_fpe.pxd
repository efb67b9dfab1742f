cdef extern from "<fenv.h>":
    int FE_DIVBYZERO, FE_INVALID, FE_OVERFLOW, FE_UNDERFLOW
    int feclearexcept(int excepts) nogil
    int fetestexcept(int excepts) nogil


cdef inline void clear_flags(int flags) noexcept nogil:
    """``feclearexcept(flags)``, skipped where none of them is set: the
    test reads the status words, the clear rewrites the whole x87
    environment and costs several times more."""
    if fetestexcept(flags):
        feclearexcept(flags)

cdef inline int all_flags() noexcept nogil:
    """The four flags NumPy's error state has modes for."""
    return FE_DIVBYZERO | FE_INVALID | FE_OVERFLOW | FE_UNDERFLOW

cdef int watched()
cdef bint acts(int raised) except -1
cdef Py_ssize_t buffer_size() except -1
cdef object quiet1(object ufunc, object a, int *raised)
cdef object quiet2(object ufunc, object a, object b, int *raised)
cdef object quiet_into(object ufunc, object a, object b, object out,
                       int *raised)
cdef object quiet_begin()
cdef int quiet_end(object saved) except -1
