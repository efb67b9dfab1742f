cdef int reduced_axis(object x, object axis, bint keepdims,
                      Py_ssize_t *outer, Py_ssize_t *n, Py_ssize_t *inner,
                      Py_ssize_t *dims) except -2
cdef object sum_middle(object x, object axis, bint keepdims)
cdef object select_middle(object x, object axis, bint keepdims,
                          bint largest)
cdef object index_middle(object x, object axis, bint largest)
