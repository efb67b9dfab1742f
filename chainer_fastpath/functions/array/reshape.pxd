cdef object reshape_variable(object gy_var, object gy, object shape)
cdef object reshape_grad(object func, tuple indexes, tuple grad_outputs)
