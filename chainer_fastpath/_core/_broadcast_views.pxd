cdef object broadcast_to(object a, object shape)
cdef object broadcast_arrays(tuple arrays)
