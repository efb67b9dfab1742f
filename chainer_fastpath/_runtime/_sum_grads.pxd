cdef object spread_grad(object func, object gy_var, object gy)
cdef object sum_to_grad(object gy_var, object gy, object shape)
