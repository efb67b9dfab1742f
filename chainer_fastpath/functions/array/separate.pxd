cdef Py_ssize_t int_axis(object axis, Py_ssize_t ndim)
cdef tuple views_along(object x, Py_ssize_t axis)
cdef object stacked(object arrays, object axis)
