cdef int float_typenum(object a, int nd)
cdef bint pair(object values, long low, Py_ssize_t *out) except -1
cdef bint outputs(object x, Py_ssize_t *g, object cover_all) except -1
cdef object padded_image(object gy, object in_shape, Py_ssize_t *g,
                         Py_ssize_t *hp, Py_ssize_t *wp)
cdef object grad_of(object result, tuple grad_outputs)
cdef tuple node_calls(object cls)
