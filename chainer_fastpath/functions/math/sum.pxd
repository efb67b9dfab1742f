cdef object spread_grad(object func, object gy_var, object gy)
