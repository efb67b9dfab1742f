cdef object reshape_variable(object gy_var, object gy, object shape)
