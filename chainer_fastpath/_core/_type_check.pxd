cdef int check_types(object node, tuple in_data) except -1
