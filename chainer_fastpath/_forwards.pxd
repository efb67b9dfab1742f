cdef object NOT_COMPILED
cdef object run_forward(object node, tuple in_data)
