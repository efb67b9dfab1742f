cdef object apply_or_debug(object node, object inputs)
