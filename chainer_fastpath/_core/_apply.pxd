cdef tuple none_layouts(Py_ssize_t n)
cdef tuple apply_detached(object node, tuple in_data, bint requires_grad)
cdef int check_outputs(object self, object outputs, bint elementwise) \
    except -1
