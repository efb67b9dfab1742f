cdef tuple apply_detached(object node, tuple in_data, bint requires_grad)
cdef object function_hooks()
