cdef object NOT_COMPILED
cdef object run_backward(object func, tuple indexes, tuple grad_outputs)
