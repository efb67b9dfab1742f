cdef object NOT_COMPILED
cdef object run_backward(object func, tuple indexes, tuple grad_outputs,
                         bint callees_stock)
cdef bint stock_callees() except -1
