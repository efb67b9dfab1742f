cdef object apply_or_debug(object node, object inputs)
cdef object apply_new(object cls, tuple inputs)
