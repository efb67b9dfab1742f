cdef extern from "<fenv.h>":
    int FE_DIVBYZERO, FE_INVALID, FE_OVERFLOW, FE_UNDERFLOW
    int feclearexcept(int excepts) nogil
    int fetestexcept(int excepts) nogil

cdef int watched()
