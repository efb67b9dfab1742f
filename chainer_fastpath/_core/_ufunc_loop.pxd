cdef extern from *:
    """
    typedef void (*cfp_loop)(char **, const Py_ssize_t *,
                             const Py_ssize_t *, void *);
    """
    # NumPy's PyUFuncGenericFunction.
    ctypedef void (*cfp_loop)(char **args, const Py_ssize_t *dimensions,
                              const Py_ssize_t *steps,
                              void *data) noexcept nogil


cdef class UfuncLoop:
    cdef cfp_loop function
    cdef void *data
    cdef int typenum

    cdef bint unary_into(self, object a, object out,
                         int *raised) except -1


cdef class FloatLoops:
    cdef readonly object ufunc
    cdef tuple loops     # UfuncLoop for float32, for float64

    cdef UfuncLoop for_type(self, int typenum)
    cdef object unary(self, object a, int *raised)
    cdef object quiet_unary(self, object a, object out, int *raised)


cdef class Binary(FloatLoops):
    cdef int op     # CFP_BINARY_* of _binary.h, -1 for other ufuncs
    cdef UfuncLoop _loop_of(self, object a, object b)
    cdef object call(self, object a, object b, int *raised)
    cdef object call_value(self, object a, double value, bint value_first,
                           int *raised)
    cdef bint into_rows(self, object a, object b, int *raised) except -1
    cdef bint into(self, object a, object b, int *raised) except -1
    cdef object call_broadcast(self, object a, object b, int *raised)
    cdef object call_apart(self, object a, object b, object out,
                           int *raised)
    cdef object quiet(self, object a, object b, int *raised)
    cdef object quiet_in_place(self, object a, object b, int *raised)


# NumPy's add, subtract and multiply, one instance each for every module.
cdef Binary add_loop, subtract_loop, multiply_loop


cdef class Reduction(FloatLoops):
    cdef object all(self, object a, bint keepdims, int *raised)


cdef class Constant:
    cdef readonly object value
    cdef object f32, f64    # 0-d arrays of value

    cdef object like(self, object x)
