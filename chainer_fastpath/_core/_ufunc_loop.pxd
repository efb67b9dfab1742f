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
