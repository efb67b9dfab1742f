cdef object NOT_COMPILED
cdef object run_forward(object node, tuple in_data)
cdef bint methods_unchanged(object node, type cls, tuple methods)
cdef object lstm_grad(tuple inputs)
