cdef object NOT_COMPILED
cdef object run_backward(object func, tuple indexes, tuple grad_outputs,
                         bint callees_stock)
cdef bint stock_callees() except -1
cdef bint embed_id_into(object func, tuple grad_outputs, object acc_var,
                        bint callees_stock) except -1
